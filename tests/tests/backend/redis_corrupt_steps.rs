//! Records written by hand: unspoiled, in progress or completed, they read back as written and
//! take their owner's writes or replay; in progress with steps that do not decode they are
//! corrupt for every reader, and for the owner's fenced writes, which change nothing.

use std::time::{Duration, SystemTime};

use idem_core::{
    store::{Completed, Outcome, OwnerToken, Record, Store, Timestamp},
    Call, Error, Fingerprint, Idempotency, StoreError,
};
use idem_stores::redis::client::{self as redis, aio::MultiplexedConnection};
use idem_stores::redis::RedisStore;
use idem_test_servers::redis::target::RedisTarget;

use super::redis_corrupt::{
    completed, in_progress, raw_value, refused_as_corrupt, value, with_steps, write, FAR,
};

/// How long the hand-written in-progress records hold their key, from now.
const HOLD: Duration = Duration::from_secs(3600);

/// What the tests here write records by hand with: a store on a Redis server, a handle, a
/// raw connection, and what their records hold: the fingerprint of `o-1`, the owner
/// `someone`, and a lease until [`HOLD`] from now.
struct Hand {
    store: RedisStore,
    idem: Idempotency,
    conn: MultiplexedConnection,
    fingerprint: Fingerprint,
    owner: OwnerToken,
    until: u64,
}

impl Hand {
    /// A hand on `target`'s server.
    async fn on(target: &RedisTarget) -> Self {
        let store = target.redis_store().clone();
        Self {
            idem: Idempotency::new(store.clone()),
            store,
            conn: target.raw().await,
            fingerprint: Fingerprint::of(&"o-1").unwrap(),
            owner: OwnerToken::from("someone".to_owned()),
            until: hold_until(),
        }
    }
}

/// Now plus [`HOLD`], in milliseconds.
fn hold_until() -> u64 {
    (Timestamp::from_system_time(SystemTime::now()) + HOLD).as_millis()
}

/// Writes an in-progress record owned by `someone`, leased until `until`, whose key expires
/// at `until` too (the anchor), with `kept` as steps_kept_until and `steps` (names and values,
/// in turn) after it.
async fn write_in_progress(
    conn: &mut MultiplexedConnection,
    redis_key: &str,
    fingerprint: &str,
    until: u64,
    kept: &[u8],
    steps: &[&[u8]],
) {
    let until_text = until.to_string();
    let mut fields = in_progress(fingerprint, &until_text, "");
    fields[6] = kept;
    let record = value(b"idm1P", &with_steps(fields, steps));
    let ttl = until
        .saturating_sub(Timestamp::from_system_time(SystemTime::now()).as_millis())
        .max(1);
    let _: () = redis::cmd("SET")
        .arg(redis_key)
        .arg(record.as_slice())
        .arg("PX")
        .arg(ttl)
        .query_async(conn)
        .await
        .unwrap();
}

/// The records this file writes by hand, unspoiled, read back as written, and their owner's
/// writes succeed: what the other tests spoil is one part of a valid record.
async fn hand_written_records_are_valid() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let Hand { store, idem, mut conn, fingerprint, owner, until } = Hand::on(&target).await;

    let key = idem.key("orders.create").part("running").finish().unwrap();
    let redis_key = store.redis_key(&key);
    let until_text = until.to_string();
    write_in_progress(
        &mut conn,
        &redis_key,
        &fingerprint.to_hex(),
        until,
        until_text.as_bytes(),
        &[b"charge", b"\"ch_1\""],
    )
    .await;
    let Some(Record::InProgress(record)) = store.get(&key).await.unwrap() else {
        panic!("the hand-written in-progress record reads back");
    };
    assert_eq!(record.owner(), &owner);
    assert_eq!(record.fingerprint(), &fingerprint);
    assert_eq!(record.lease_until(), Timestamp::from_millis(until));
    assert_eq!(record.fencing_token(), 1);
    assert_eq!(record.attempt(), 1);
    assert_eq!(record.steps().get("charge"), Some(&b"\"ch_1\""[..]));
    assert_eq!(record.steps().len(), 1);
    assert_eq!(record.steps().kept_until(), Timestamp::from_millis(until));
    let later = Timestamp::from_millis(until);
    store
        .record_step(&key, &owner, "ledger", b"7", later)
        .await
        .expect("the owner records a step");
    store
        .renew(&key, &owner, later)
        .await
        .expect("the owner renews");
    let Some(Record::InProgress(record)) = store.get(&key).await.unwrap() else {
        panic!("still in progress");
    };
    assert_eq!(record.steps().get("ledger"), Some(&b"7"[..]));
    assert_eq!(record.steps().get("charge"), Some(&b"\"ch_1\""[..]));

    let key = idem.key("orders.create").part("done").finish().unwrap();
    let hex = fingerprint.to_hex();
    let record = value(b"idm1C", &completed(&hex, "ok", FAR));
    write(&mut conn, &store.redis_key(&key), "SET", &[record]).await;
    let Some(Record::Completed(record)) = store.get(&key).await.unwrap() else {
        panic!("the hand-written completed record reads back");
    };
    assert_eq!(record.fingerprint(), &fingerprint);
    assert_eq!(record.outcome(), &Outcome::ok(b"1".to_vec()));
    assert_eq!(
        record.expires_at(),
        Timestamp::from_millis(FAR.parse().unwrap())
    );
    let done = idem
        .run(Call::new(key, fingerprint), async { Ok::<_, Error>(2) })
        .await
        .unwrap();
    assert!(done.replayed);
    assert_eq!(done.value, 1);
}

/// A broken in-progress record: what is broken, its steps_kept_until, its steps, and whether
/// the owner's writes read the broken part.
type StepCase<'a> = (&'a str, &'a [u8], &'a [&'a [u8]], bool);

/// Steps that do not decode are corrupt for every reader; a steps_kept_until that is not a
/// timestamp, or that steps lack, and a step without its value are corrupt for the owner's
/// fenced writes too, which change nothing.
async fn corrupt_steps_are_an_error_not_a_panic() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let Hand { store, idem, mut conn, fingerprint, owner, until } = Hand::on(&target).await;
    let until_text = until.to_string();
    let cases: [StepCase; 5] = [
        (
            "a step name that is not UTF-8",
            until_text.as_bytes(),
            &[b"\xff\xfe", b"1"],
            false,
        ),
        (
            "a steps_kept_until that is negative",
            b"-3",
            &[b"charge", b"1"],
            true,
        ),
        (
            "a steps_kept_until without steps that is not a timestamp",
            b"\xff",
            &[],
            true,
        ),
        (
            "a step without steps_kept_until",
            b"",
            &[b"charge", b"1"],
            true,
        ),
        (
            "a step name without a value",
            until_text.as_bytes(),
            &[b"charge"],
            true,
        ),
    ];
    for (what, kept, steps, owner_refused) in cases {
        let key = idem.key("orders.create").part(what).finish().unwrap();
        let redis_key = store.redis_key(&key);
        write_in_progress(
            &mut conn,
            &redis_key,
            &fingerprint.to_hex(),
            until,
            kept,
            steps,
        )
        .await;

        let err = store.get(&key).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Corrupt(_)),
            "{what}: get gave {err:?}"
        );
        refused_as_corrupt(&idem, Call::new(key.clone(), fingerprint), what).await;
        if !owner_refused {
            continue;
        }
        let before = raw_value(&mut conn, &redis_key).await;
        assert!(before.is_some(), "{what}: written");
        let later = Timestamp::from_millis(until);
        let completed = Completed::new(
            fingerprint,
            Outcome::ok(b"1".to_vec()),
            Timestamp::from_millis(until),
        );
        let results = [
            store.record_step(&key, &owner, "ledger", b"7", later).await,
            store.renew(&key, &owner, later).await,
            store.release(&key, &owner).await,
            store.complete(&key, &owner, &completed).await,
        ];
        for result in results {
            assert!(
                matches!(result, Err(StoreError::Corrupt(_))),
                "{what}: the owner's write gave {result:?}"
            );
        }
        assert_eq!(
            raw_value(&mut conn, &redis_key).await,
            before,
            "{what}: a refused write changed the record"
        );
    }
}

idem_tests::module_tests! {
    async hand_written_records_are_valid,
    async corrupt_steps_are_an_error_not_a_panic,
}
