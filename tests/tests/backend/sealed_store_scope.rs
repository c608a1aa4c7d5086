//! Sealed values are bound to the store that holds them, not only to the key: two services
//! sharing a Redis (prefixes `svc_a:` and `svc_b:`) or a PostgreSQL database (tables
//! `svc_a_records` and `svc_b_records`) and a keyring never open each other's records. A record
//! of A copied to B's key, with the servers' own commands, is refused as corrupt by B, never
//! replayed. A value sealed by the first format (version 1, bound to the key alone) is refused
//! with a reason that says so.

use idem_core::seal::Keyring;
use idem_core::{Call, Error, Fingerprint, Idempotency, Key};
use idem_stores::postgres::PostgresStore;
use idem_stores::redis::client as redis;
use idem_stores::redis::RedisStore;
use idem_test_servers::postgres::TestPg;
use idem_test_servers::redis::target::RedisTarget;

fn keyring() -> Keyring {
    Keyring::new("k1", [7; 32])
}

fn call(idem: &Idempotency) -> Call {
    let key = idem.key("orders.create").part("o-1").finish().unwrap();
    Call::new(key, Fingerprint::of("o-1").unwrap())
}

/// Runs the order on `idem`, answering `answer` if the body runs.
async fn order(idem: &Idempotency, answer: &str) -> Result<(String, bool), Error> {
    let answer = answer.to_owned();
    let done = idem
        .run(call(idem), async move { Ok::<_, Error>(answer) })
        .await?;
    Ok((done.value, done.replayed))
}

/// Asserts that `result` is a refusal as corrupt, and returns its reason.
#[track_caller]
fn refused(result: Result<(String, bool), Error>) -> String {
    match result {
        Err(Error::CorruptRecord { reason, .. }) => reason,
        other => panic!("the copied record must be refused as corrupt, not {other:?}"),
    }
}

/// `haystack` with its one `from` replaced by `to`.
fn replaced(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let at = haystack
        .windows(from.len())
        .position(|window| window == from)
        .unwrap_or_else(|| panic!("{haystack:?} holds {from:?}"));
    [&haystack[..at], to, &haystack[at + from.len()..]].concat()
}

async fn redis_store(target: &RedisTarget, prefix: &str) -> RedisStore {
    RedisStore::builder(redis::Client::open(target.url()).unwrap())
        .prefix(prefix)
        .connect()
        .await
        .unwrap()
}

async fn a_sealed_record_copied_to_another_redis_prefix_does_not_open() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let (store_a, store_b) = (
        redis_store(&target, "svc_a:").await,
        redis_store(&target, "svc_b:").await,
    );
    let a = Idempotency::new(store_a.clone()).with_sealing(keyring());
    let b = Idempotency::new(store_b.clone()).with_sealing(keyring());
    assert_eq!(
        order(&a, "A's answer").await.unwrap(),
        ("A's answer".into(), false)
    );

    let key: Key = call(&a).key().clone();
    let mut raw = target.raw().await;
    let value: Vec<u8> = redis::cmd("GET")
        .arg(store_a.redis_key(&key))
        .query_async(&mut raw)
        .await
        .unwrap();
    let () = redis::cmd("SET")
        .arg(store_b.redis_key(&key))
        .arg(&value)
        .query_async(&mut raw)
        .await
        .unwrap();

    let reason = refused(order(&b, "B's answer").await);
    assert!(reason.contains("does not open"), "{reason}");
    assert_eq!(
        order(&a, "again").await.unwrap(),
        ("A's answer".into(), true),
        "A still replays its own"
    );

    // A value of the first format, bound to the key alone: refused, saying why.
    let first_format = replaced(&value, b"\0iS\x02", b"\0iS\x01");
    let () = redis::cmd("SET")
        .arg(store_a.redis_key(&key))
        .arg(&first_format)
        .query_async(&mut raw)
        .await
        .unwrap();
    let reason = refused(order(&a, "again").await);
    assert!(reason.contains("version 1"), "{reason}");
}

async fn a_sealed_row_copied_to_another_postgres_table_does_not_open() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let table = |name: &str| {
        PostgresStore::builder(target.pool.clone())
            .table(name)
            .build()
    };
    let (store_a, store_b) = (table("svc_a_records"), table("svc_b_records"));
    store_a.migrate().await.unwrap();
    store_b.migrate().await.unwrap();
    let a = Idempotency::new(store_a).with_sealing(keyring());
    let b = Idempotency::new(store_b).with_sealing(keyring());
    assert_eq!(
        order(&a, "A's answer").await.unwrap(),
        ("A's answer".into(), false)
    );

    sqlx::query("INSERT INTO svc_b_records SELECT * FROM svc_a_records")
        .execute(&target.pool)
        .await
        .unwrap();
    let reason = refused(order(&b, "B's answer").await);
    assert!(reason.contains("does not open"), "{reason}");
}

idem_tests::module_tests! {
    async a_sealed_record_copied_to_another_redis_prefix_does_not_open,
    async a_sealed_row_copied_to_another_postgres_table_does_not_open,
}
