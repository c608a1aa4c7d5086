//! Garbage under a key gives `StoreError::Corrupt` / `Error::CorruptRecord`, never a panic, and
//! never runs the function; and the helpers that write a record by hand, which
//! `redis_corrupt_steps` shares.
//!
//! A record is one string value, `idm1`, a state byte, then fields written `len:bytes` (see the
//! Redis store's module docs); the values here are written by hand with `SET`.

use std::sync::atomic::{AtomicUsize, Ordering};

use idem_core::{
    store::{Completed, Outcome, OwnerToken, Store, Timestamp},
    Call, Error, Fingerprint, Idempotency, StoreError,
};
use idem_stores::redis::client::{self as redis, aio::MultiplexedConnection};
use idem_test_servers::redis::target::RedisTarget;

/// A timestamp far ahead (year 5138), as its decimal text.
pub(super) const FAR: &str = "99999999999999";

/// One field of the layout: its length in decimal digits, `:`, then its bytes.
fn field(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.len().to_string().into_bytes();
    out.push(b':');
    out.extend_from_slice(bytes);
    out
}

/// `head` (the magic and the state byte, or anything else in front), then `fields`, each as
/// [`field`].
pub(super) fn value(head: &[u8], fields: &[&[u8]]) -> Vec<u8> {
    let mut out = head.to_vec();
    for bytes in fields {
        out.extend(field(bytes));
    }
    out
}

/// The fields of an in-progress record of `someone` with no step: fingerprint, owner,
/// lease_until, fencing_token 1, attempt 1, anchor (`until` too), steps_kept_until.
pub(super) fn in_progress<'a>(fingerprint: &'a str, until: &'a str, kept: &'a str) -> Vec<&'a [u8]> {
    [fingerprint, "someone", until, "1", "1", until, kept]
        .map(str::as_bytes)
        .to_vec()
}

/// The fields of a completed record of `someone`: fingerprint, owner, outcome, expires_at,
/// body.
pub(super) fn completed<'a>(fingerprint: &'a str, outcome: &'a str, expires_at: &'a str) -> Vec<&'a [u8]> {
    [fingerprint, "someone", outcome, expires_at, "1"]
        .map(str::as_bytes)
        .to_vec()
}

/// `fields` with `steps` (names and values, in turn) after them.
pub(super) fn with_steps<'a>(mut fields: Vec<&'a [u8]>, steps: &[&'a [u8]]) -> Vec<&'a [u8]> {
    fields.extend_from_slice(steps);
    fields
}

/// Ways to spoil a record: what, then one command on the key (its name and its arguments
/// after the key).
fn spoilers(fingerprint: &str) -> Vec<(&'static str, &'static str, Vec<Vec<u8>>)> {
    let set = |value: Vec<u8>| ("SET", vec![value]);
    let charge: [&[u8]; 2] = [b"charge", b"\"ch_1\""];
    // 64 characters, as long as a fingerprint, none of them hex.
    let not_hex = "z".repeat(64);
    let spoilers = [
        ("a string", set(b"\x01garbage".to_vec())),
        (
            "a bad magic",
            set(value(b"xxxxP", &in_progress(fingerprint, FAR, ""))),
        ),
        ("the magic alone", set(b"idm1".to_vec())),
        (
            "an unknown state byte",
            set(value(b"idm1Q", &in_progress(fingerprint, FAR, ""))),
        ),
        (
            "a field length that is not digits",
            // The first field (the fingerprint) is `4x:abcd`.
            set(value(
                b"idm1P4x:abcd",
                &in_progress(fingerprint, FAR, "")[1..],
            )),
        ),
        (
            "a field length with a sign",
            set({
                let mut head = b"idm1C+64:".to_vec();
                head.extend_from_slice(fingerprint.as_bytes());
                value(&head, &completed(fingerprint, "ok", FAR)[1..])
            }),
        ),
        (
            "a field running past the end",
            // The body says 10 bytes and has 3.
            set({
                let mut bytes = value(b"idm1C", &completed(fingerprint, "ok", FAR)[..4]);
                bytes.extend_from_slice(b"10:abc");
                bytes
            }),
        ),
        (
            "a field length of 10 digits",
            // The body `1`, its length written with 10 digits.
            set({
                let mut bytes = value(b"idm1C", &completed(fingerprint, "ok", FAR)[..4]);
                bytes.extend_from_slice(b"0000000001:1");
                bytes
            }),
        ),
        (
            "an in-progress record with too few fields",
            // No steps_kept_until.
            set(value(b"idm1P", &in_progress(fingerprint, FAR, "")[..6])),
        ),
        (
            "a lease_until that is not digits",
            set({
                let mut fields = in_progress(fingerprint, FAR, "");
                fields[2] = b"-5";
                value(b"idm1P", &fields)
            }),
        ),
        (
            "a fingerprint that is not hex",
            set(value(b"idm1C", &completed(&not_hex, "ok", FAR))),
        ),
        (
            "an outcome of unknown kind",
            set(value(b"idm1C", &completed(fingerprint, "maybe", FAR))),
        ),
        (
            "an expires_at that is not digits",
            set(value(b"idm1C", &completed(fingerprint, "ok", "tomorrow"))),
        ),
        (
            "a completed record with 4 fields",
            // No body.
            set(value(b"idm1C", &completed(fingerprint, "ok", FAR)[..4])),
        ),
        (
            "a completed record with 6 fields",
            set(value(
                b"idm1C",
                &with_steps(completed(fingerprint, "ok", FAR), &[b"1"]),
            )),
        ),
        (
            "a step without steps_kept_until",
            set(value(
                b"idm1P",
                &with_steps(in_progress(fingerprint, FAR, ""), &charge),
            )),
        ),
        (
            "a step name without a value",
            set(value(
                b"idm1P",
                &with_steps(in_progress(fingerprint, FAR, FAR), &charge[..1]),
            )),
        ),
        (
            "a step name that is not UTF-8",
            set(value(
                b"idm1P",
                &with_steps(in_progress(fingerprint, FAR, FAR), &[b"\xff\xfe", b"1"]),
            )),
        ),
        (
            "a steps_kept_until that is not a timestamp",
            set(value(
                b"idm1P",
                &with_steps(in_progress(fingerprint, FAR, "later"), &charge),
            )),
        ),
        (
            "a hash of an earlier layout",
            (
                "HSET",
                [
                    "state",
                    "in_progress",
                    "fingerprint",
                    fingerprint,
                    "owner",
                    "someone",
                    "lease_until",
                    FAR,
                    "fencing_token",
                    "1",
                    "attempt",
                    "1",
                    "clock_offset",
                    "0",
                ]
                .map(|arg| arg.as_bytes().to_vec())
                .to_vec(),
            ),
        ),
        ("a list", ("RPUSH", vec![b"x".to_vec()])),
    ];
    spoilers
        .into_iter()
        .map(|(what, (command, args))| (what, command, args))
        .collect()
}

/// Replaces whatever is under `redis_key` by running `command` with `args` on it.
pub(super) async fn write(conn: &mut MultiplexedConnection, redis_key: &str, command: &str, args: &[Vec<u8>]) {
    let _: () = redis::cmd("DEL")
        .arg(redis_key)
        .query_async(conn)
        .await
        .unwrap();
    let mut cmd = redis::cmd(command);
    cmd.arg(redis_key);
    for arg in args {
        cmd.arg(arg.as_slice());
    }
    let _: redis::Value = cmd.query_async(conn).await.unwrap();
}

/// The value under `redis_key`, byte for byte (`GET`); `None` if there is none.
pub(super) async fn raw_value(conn: &mut MultiplexedConnection, redis_key: &str) -> Option<Vec<u8>> {
    redis::cmd("GET")
        .arg(redis_key)
        .query_async(conn)
        .await
        .unwrap()
}

/// What `redis_key` holds, byte for byte: its type, and its value for a string (`GET`) or its
/// serialised form (`DUMP`) for another type, which `GET` refuses.
async fn stored(conn: &mut MultiplexedConnection, redis_key: &str) -> (String, Option<Vec<u8>>) {
    let kind: String = redis::cmd("TYPE")
        .arg(redis_key)
        .query_async(conn)
        .await
        .unwrap();
    let bytes = if kind == "string" {
        raw_value(conn, redis_key).await
    } else {
        redis::cmd("DUMP")
            .arg(redis_key)
            .query_async(conn)
            .await
            .unwrap()
    };
    (kind, bytes)
}

/// Runs `call`, whose record is spoiled by `what`: refused as corrupt (a server error),
/// without running the body.
pub(super) async fn refused_as_corrupt(idem: &Idempotency, call: Call, what: &str) {
    let runs = AtomicUsize::new(0);
    let err = idem
        .run(call, async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(1)
        })
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::CorruptRecord { .. }),
        "{what}: {err:?}"
    );
    assert_eq!(err.http_status(), 500, "{what}");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "{what}: not run");
}

async fn garbage_under_a_key_is_an_error_not_a_panic() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let store = target.redis_store().clone();
    let idem = Idempotency::new(store.clone());
    let mut conn = target.raw().await;
    let fingerprint = Fingerprint::of(&"o-1").unwrap();

    for (what, command, args) in spoilers(&fingerprint.to_hex()) {
        let key = idem.key("orders.create").part(what).finish().unwrap();
        let redis_key = store.redis_key(&key);
        write(&mut conn, &redis_key, command, &args).await;
        let before = stored(&mut conn, &redis_key).await;
        assert!(before.1.is_some(), "{what}: written");

        refused_as_corrupt(&idem, Call::new(key.clone(), fingerprint), what).await;

        match store.get(&key).await {
            Err(StoreError::Corrupt(reason)) => {
                if command == "HSET" {
                    // An operator upgrading learns why.
                    assert!(reason.contains("earlier layout"), "{what}: {reason}");
                }
            }
            other => panic!("{what}: get gave {other:?}"),
        }

        // The fenced operations refuse too, and change nothing.
        let owner = OwnerToken::generate();
        let completed = Completed::new(
            fingerprint,
            Outcome::ok(b"1".to_vec()),
            Timestamp::from_millis(u64::MAX / 2),
        );
        let results = [
            store.complete(&key, &owner, &completed).await,
            store.release(&key, &owner).await,
            store.renew(&key, &owner, Timestamp::from_millis(1)).await,
            store
                .record_step(&key, &owner, "charge", b"1", Timestamp::from_millis(1))
                .await,
        ];
        for result in results {
            assert!(
                matches!(result, Err(StoreError::Corrupt(_) | StoreError::LeaseLost)),
                "{what}: {result:?}"
            );
        }
        assert_eq!(
            stored(&mut conn, &redis_key).await,
            before,
            "{what}: a refused operation changed the record"
        );
        assert!(store.get(&key).await.is_err(), "{what}: still corrupt");

        // A purge, however late, leaves an unreadable record for an operator to look at.
        let inventory = store.inventory().expect("the Redis store lists");
        let years_later = Timestamp::from_millis(4_000_000_000_000);
        inventory.purge_expired(years_later, 100).await.unwrap();
        assert_eq!(
            stored(&mut conn, &redis_key).await,
            before,
            "{what}: changed or removed by the purge"
        );

        // An operator can unblock the key.
        idem.forget(&key).await.unwrap();
        let runs = AtomicUsize::new(0);
        let done = idem
            .run(Call::new(key, fingerprint), async {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Error>(1)
            })
            .await
            .unwrap();
        assert!(!done.replayed, "{what}");
        assert_eq!(runs.load(Ordering::SeqCst), 1, "{what}: run once forgotten");
    }
}

idem_tests::module_tests! {
    async garbage_under_a_key_is_an_error_not_a_panic,
}
