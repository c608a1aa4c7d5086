//! Sealed records on every store, read back with the backend's own client: no part of a key
//! and no outcome or step text in any stored byte, while the handle replays them.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use idem_core::seal::Keyring;
use idem_core::{
    step,
    store::{Claim, Completed, InProgress, Outcome, OwnerToken, Record, Store, Timestamp},
    Call, Error, Fingerprint, Idempotency,
};
use idem_stores::redis::client as redis;
use idem_test_servers::dynamodb::TestDynamo;
use idem_test_servers::postgres::TestPg;
use idem_test_servers::redis::target::RedisTarget;
use idem_tests::sealed::{keyring, KEY_DIGEST_SECRET};

/// What must never be stored in clear: key parts, the function's name, outcome and step text.
const SECRETS: [&str; 6] = [
    "alice@example.com",
    "bob@example.com",
    "accounts.close",
    "Alice Liddell",
    // Not "4242" alone: four digits turn up in the records' timestamps now and then.
    "card 4242",
    "re_secret_77",
];

fn call(idem: &Idempotency, email: &str) -> Call {
    let key = idem.key("accounts.close").part(email).finish().unwrap();
    Call::new(key, Fingerprint::of(&email).unwrap())
}

fn assert_nothing_in_clear(store: &str, dump: &[u8]) {
    // A fingerprint anyone can compute from a guess of the arguments would give them away.
    let guessable = Fingerprint::of(&"alice@example.com").unwrap().to_hex();
    for secret in SECRETS.iter().copied().chain([guessable.as_str()]) {
        let found = dump
            .windows(secret.len())
            .any(|window| window == secret.as_bytes());
        assert!(!found, "{store} stores {secret:?} in clear");
    }
    // The dump is of the records: their namespace is in clear.
    assert!(
        dump.windows(6).any(|window| window == b"idem|#"),
        "{store}: no record found in the dump"
    );
}

/// Stores one completed record (alice) and one running with a recorded step (bob) through a
/// sealed handle on `store`, checks `dump` of everything the backend holds, then checks the
/// handle still replays alice's outcome.
async fn check<F, D>(name: &str, store: Arc<dyn Store>, dump: D)
where
    D: Fn() -> F,
    F: std::future::Future<Output = Vec<u8>>,
{
    let idem = Idempotency::from_arc(store.clone())
        .with_sealing(keyring())
        .with_key_digest(KEY_DIGEST_SECRET);
    let answer = || async { Ok::<_, Error>("closed: Alice Liddell, card 4242".to_owned()) };
    idem.run(call(&idem, "alice@example.com"), answer())
        .await
        .unwrap();

    let (recorded, stepped) = tokio::sync::oneshot::channel::<()>();
    let (finish, finished) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn({
        let idem = idem.clone();
        async move {
            idem.run(call(&idem, "bob@example.com"), async {
                step("refund", async {
                    Ok::<_, Error>("re_secret_77".to_owned())
                })
                .await?;
                recorded.send(()).unwrap();
                finished.await.unwrap();
                Ok::<_, Error>("done".to_owned())
            })
            .await
        }
    });
    tokio::time::timeout(Duration::from_secs(60), stepped)
        .await
        .expect("the step is recorded")
        .unwrap();

    let bytes = dump().await;
    eprintln!("{name}: {}", String::from_utf8_lossy(&bytes).escape_debug());
    assert_nothing_in_clear(name, &bytes);

    finish.send(()).unwrap();
    running.await.unwrap().unwrap();
    let replay = idem
        .run(call(&idem, "alice@example.com"), answer())
        .await
        .unwrap();
    assert!(replay.replayed);
    assert!(replay.value.contains("4242"));

    rotation_and_refusals(name, &idem, store).await;
}

/// On the same store: a ring rotated to a new key replays what the old one sealed; a ring
/// without that key, or a sealed body changed in the store, is refused and never runs.
async fn rotation_and_refusals(name: &str, sealed: &Idempotency, raw: Arc<dyn Store>) {
    let on = |ring: Keyring| {
        Idempotency::from_arc(raw.clone())
            .with_sealing(ring)
            .with_key_digest(KEY_DIGEST_SECRET)
    };
    let never_runs = || async { Ok::<_, Error>("ran again".to_owned()) };
    let rotated = on(Keyring::new("test-2027-05", [9; 32]).with_old("test-2026-11", [7; 32]));
    let replay = rotated
        .run(call(&rotated, "alice@example.com"), never_runs())
        .await
        .unwrap();
    assert!(
        replay.replayed && replay.value.contains("4242"),
        "{name}: rotation"
    );

    let lacking = on(Keyring::new("test-2027-05", [9; 32]));
    match lacking
        .run(call(&lacking, "alice@example.com"), never_runs())
        .await
    {
        Err(Error::CorruptRecord { reason, .. }) => {
            assert!(reason.contains("`test-2026-11`"), "{name}: {reason}")
        }
        other => panic!("{name}: a ring without the key: {other:?}"),
    }

    // Someone with write access changes one byte of the sealed body.
    let key = sealed.stored_key(call(sealed, "alice@example.com").key());
    let Some(Record::Completed(record)) = raw.get(&key).await.unwrap() else {
        panic!("{name}: the completed record");
    };
    let mut body = record.outcome().body().to_vec();
    *body.last_mut().unwrap() ^= 1;
    raw.delete(&key).await.unwrap();
    let owner = OwnerToken::generate();
    let now = Timestamp::from_system_time(std::time::SystemTime::now());
    let claim = Claim::new(
        InProgress::new(
            owner.clone(),
            *record.fingerprint(),
            now + Duration::from_secs(60),
        ),
        now,
    );
    raw.reserve(&key, &claim).await.unwrap();
    let changed = Completed::new(
        *record.fingerprint(),
        Outcome::ok(body),
        record.expires_at(),
    );
    raw.complete(&key, &owner, &changed).await.unwrap();
    match sealed
        .run(call(sealed, "alice@example.com"), never_runs())
        .await
    {
        Err(Error::CorruptRecord { .. }) => {}
        other => panic!("{name}: a changed body: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_holds_nothing_in_clear() {
    let Some(redis_target) = RedisTarget::on_owned().await else {
        return;
    };
    let store = Arc::new(redis_target.redis_store().clone());
    check("Redis", store, || async {
        let mut conn = redis_target.raw().await;
        let keys: Vec<Vec<u8>> = redis::cmd("KEYS")
            .arg("*")
            .query_async(&mut conn)
            .await
            .unwrap();
        let mut dump = Vec::new();
        // Records read, by state byte: alice's completed one and bob's in progress must be.
        let (mut completed, mut in_progress) = (0, 0);
        for key in keys {
            let kind: String = redis::cmd("TYPE")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap();
            dump.extend_from_slice(&key);
            dump.push(b'\n');
            match kind.as_str() {
                // A record is one string value: `idm1`, its state byte, then its fields.
                "string" => {
                    let value: Option<Vec<u8>> = redis::cmd("GET")
                        .arg(&key)
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                    let value = value.unwrap_or_default();
                    if value.starts_with(b"idm1C") {
                        completed += 1;
                    } else if value.starts_with(b"idm1P") {
                        in_progress += 1;
                    }
                    dump.extend_from_slice(&value);
                }
                // Not written by this store, but whatever Redis holds is dumped.
                "hash" => {
                    let fields: Vec<Vec<u8>> = redis::cmd("HGETALL")
                        .arg(&key)
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                    for field in fields {
                        dump.extend_from_slice(&field);
                        dump.push(b' ');
                    }
                }
                _ => {}
            }
            dump.push(b'\n');
        }
        assert!(
            completed >= 1 && in_progress >= 1,
            "Redis: the dump read {completed} completed and {in_progress} in-progress records"
        );
        dump
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_holds_nothing_in_clear() {
    let Some(postgres) = TestPg::start_owned().await else {
        return;
    };
    check("PostgreSQL", postgres.store.clone(), || async {
        // The body as its bytes: `t::text` would print a bytea in hex, hiding clear text.
        let rows: Vec<(String, String, String, Vec<u8>, String)> = sqlx::query_as(&format!(
            "SELECT key, fingerprint, coalesce(outcome, ''), coalesce(body, ''::bytea), \
             coalesce(steps::text, '') FROM {}",
            idem_stores::postgres::DEFAULT_TABLE
        ))
        .fetch_all(&postgres.pool)
        .await
        .unwrap();
        let mut dump = Vec::new();
        for (key, fingerprint, outcome, body, steps) in rows {
            for text in [key, fingerprint, outcome] {
                dump.extend_from_slice(text.as_bytes());
                dump.push(b' ');
            }
            dump.extend_from_slice(&body);
            dump.push(b' ');
            dump.extend_from_slice(steps.as_bytes());
            dump.push(b'\n');
        }
        dump
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_holds_nothing_in_clear() {
    let Some(dynamo) = TestDynamo::start_owned().await else {
        return;
    };
    check("DynamoDB", dynamo.store.clone(), || async {
        let items = dynamo
            .client
            .scan()
            .table_name(dynamo.table())
            .send()
            .await
            .unwrap()
            .items
            .unwrap_or_default();
        let mut dump = Vec::new();
        for item in items {
            for (name, value) in item {
                dump.extend_from_slice(name.as_bytes());
                dump.push(b'=');
                dump_value(&value, &mut dump);
                dump.push(b' ');
            }
            dump.push(b'\n');
        }
        dump
    })
    .await;
}

fn dump_value(value: &AttributeValue, dump: &mut Vec<u8>) {
    match value {
        AttributeValue::S(text) | AttributeValue::N(text) => {
            dump.extend_from_slice(text.as_bytes())
        }
        AttributeValue::B(bytes) => dump.extend_from_slice(bytes.as_ref()),
        AttributeValue::M(map) => {
            for (name, inner) in map {
                dump.extend_from_slice(name.as_bytes());
                dump_value(inner, dump);
            }
        }
        AttributeValue::L(list) => list.iter().for_each(|inner| dump_value(inner, dump)),
        other => dump.extend_from_slice(format!("{other:?}").as_bytes()),
    }
}
