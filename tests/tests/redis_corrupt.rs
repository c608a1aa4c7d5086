//! Garbage under a key gives `StoreError::Corrupt` / `Error::CorruptRecord`, never a panic, and
//! never runs the function.

use std::sync::atomic::{AtomicUsize, Ordering};

use idem_core::{
    Call, Completed, Error, Fingerprint, Idempotency, Outcome, OwnerToken, Store, StoreError,
    Timestamp,
};
use idem_stores::redis::client::{self as redis, aio::MultiplexedConnection};
use idem_tests::redis::target::RedisTarget;

/// Ways to spoil a record, each written with raw commands.
fn spoilers(fingerprint: &str) -> Vec<(&'static str, Vec<Vec<String>>)> {
    let hset = |fields: &[(&str, &str)]| {
        let mut cmd = vec!["HSET".to_owned(), "{key}".to_owned()];
        for (name, value) in fields {
            cmd.push((*name).to_owned());
            cmd.push((*value).to_owned());
        }
        vec![cmd]
    };
    let far = "99999999999999";
    vec![
        (
            "a string",
            vec![vec!["SET".into(), "{key}".into(), "\u{1}garbage".into()]],
        ),
        (
            "a list",
            vec![vec!["RPUSH".into(), "{key}".into(), "x".into()]],
        ),
        ("a hash without state", hset(&[("foo", "bar")])),
        (
            "an unknown state",
            hset(&[("state", "pending"), ("fingerprint", fingerprint)]),
        ),
        (
            "a reservation without fingerprint or owner",
            hset(&[
                ("state", "in_progress"),
                ("lease_until", far),
                ("clock_offset", "0"),
            ]),
        ),
        (
            "a reservation with a negative lease",
            hset(&[
                ("state", "in_progress"),
                ("fingerprint", fingerprint),
                ("owner", "someone"),
                ("lease_until", "-5"),
                ("clock_offset", "0"),
            ]),
        ),
        (
            "a step without steps_kept_until",
            hset(&[
                ("state", "in_progress"),
                ("fingerprint", fingerprint),
                ("owner", "someone"),
                ("lease_until", "1"),
                ("fencing_token", "1"),
                ("attempt", "1"),
                ("clock_offset", "0"),
                ("step:charge", "\"ch_1\""),
            ]),
        ),
        (
            "a steps_kept_until that is not a timestamp",
            hset(&[
                ("state", "in_progress"),
                ("fingerprint", fingerprint),
                ("owner", "someone"),
                ("lease_until", far),
                ("fencing_token", "1"),
                ("attempt", "1"),
                ("clock_offset", "0"),
                ("step:charge", "\"ch_1\""),
                ("steps_kept_until", "later"),
            ]),
        ),
        (
            "an outcome with a bad expiry",
            hset(&[
                ("state", "completed"),
                ("fingerprint", fingerprint),
                ("outcome", "ok"),
                ("body", "1"),
                ("expires_at", "tomorrow"),
            ]),
        ),
        (
            "an outcome with a bad fingerprint",
            hset(&[
                ("state", "completed"),
                ("fingerprint", "not-hex"),
                ("outcome", "ok"),
                ("body", "1"),
                ("expires_at", far),
            ]),
        ),
        (
            "an outcome of unknown kind",
            hset(&[
                ("state", "completed"),
                ("fingerprint", fingerprint),
                ("outcome", "maybe"),
                ("body", "1"),
                ("expires_at", far),
            ]),
        ),
        (
            "an outcome without body",
            hset(&[
                ("state", "completed"),
                ("fingerprint", fingerprint),
                ("outcome", "ok"),
                ("expires_at", far),
            ]),
        ),
    ]
}

async fn write(conn: &mut MultiplexedConnection, redis_key: &str, commands: &[Vec<String>]) {
    let _: () = redis::cmd("DEL")
        .arg(redis_key)
        .query_async(conn)
        .await
        .unwrap();
    for command in commands {
        let mut cmd = redis::cmd(&command[0]);
        for arg in &command[1..] {
            cmd.arg(if arg == "{key}" {
                redis_key
            } else {
                arg.as_str()
            });
        }
        let _: redis::Value = cmd.query_async(conn).await.unwrap();
    }
}

async fn garbage_under_a_key_is_an_error_not_a_panic() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let store = target.redis_store().clone();
    let idem = Idempotency::new(store.clone());
    let mut conn = target.raw().await;
    let runs = AtomicUsize::new(0);
    let fingerprint = Fingerprint::of(&"o-1").unwrap();

    for (what, commands) in spoilers(&fingerprint.to_hex()) {
        let key = idem.key("orders.create").part(what).finish().unwrap();
        write(&mut conn, &store.redis_key(&key), &commands).await;

        let err = idem
            .run(Call::new(key.clone(), fingerprint), async {
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

        let err = store.get(&key).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Corrupt(_)),
            "{what}: get gave {err:?}"
        );

        // The fenced operations refuse too, and change nothing.
        let owner = OwnerToken::generate();
        let completed = Completed::new(
            fingerprint,
            Outcome::Ok(b"1".to_vec()),
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
        assert!(store.get(&key).await.is_err(), "{what}: still corrupt");

        // A purge, however late, leaves an unreadable record for an operator to look at.
        let inventory = store.inventory().expect("the Redis store lists");
        let years_later = Timestamp::from_millis(4_000_000_000_000);
        inventory.purge_expired(years_later, 100).await.unwrap();
        assert!(store.get(&key).await.is_err(), "{what}: kept by the purge");

        // An operator can unblock the key.
        idem.forget(&key).await.unwrap();
        let done = idem
            .run(Call::new(key, fingerprint), async {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Error>(1)
            })
            .await
            .unwrap();
        assert!(!done.replayed, "{what}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), spoilers("").len());
}

/// Raw hash fields, as bytes.
type RawFields<'a> = &'a [(&'a [u8], &'a [u8])];

/// Writes an in-progress record owned by `someone` and leased far ahead, with `extra`.
async fn write_in_progress(
    conn: &mut MultiplexedConnection,
    redis_key: &str,
    fingerprint: &str,
    extra: RawFields<'_>,
) {
    let mut cmd = redis::cmd("HSET");
    cmd.arg(redis_key);
    for (name, value) in [
        ("state", "in_progress"),
        ("fingerprint", fingerprint),
        ("owner", "someone"),
        ("lease_until", "99999999999999"),
        ("fencing_token", "1"),
        ("attempt", "1"),
        ("clock_offset", "0"),
    ] {
        cmd.arg(name).arg(value);
    }
    for (name, value) in extra {
        cmd.arg(*name).arg(*value);
    }
    let _: i64 = cmd.query_async(conn).await.unwrap();
}

async fn fields(conn: &mut MultiplexedConnection, redis_key: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    redis::cmd("HGETALL")
        .arg(redis_key)
        .query_async(conn)
        .await
        .unwrap()
}

/// Step fields that do not decode are corrupt for every reader; a `steps_kept_until` that is
/// not a timestamp is corrupt for its owner's fenced writes too, which change nothing.
async fn corrupt_steps_are_an_error_not_a_panic() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let store = target.redis_store().clone();
    let idem = Idempotency::new(store.clone());
    let mut conn = target.raw().await;
    let fingerprint = Fingerprint::of(&"o-1").unwrap();
    let far: &[u8] = b"99999999999999";
    // What is written, and whether the owner's step and renewal read the broken field.
    let cases: [(&str, RawFields, bool); 3] = [
        (
            "a step name that is not UTF-8",
            &[(b"step:\xff\xfe", b"1"), (b"steps_kept_until", far)],
            false,
        ),
        (
            "a steps_kept_until that is negative",
            &[(b"step:charge", b"1"), (b"steps_kept_until", b"-3")],
            true,
        ),
        (
            "a steps_kept_until without steps that is not a timestamp",
            &[(b"steps_kept_until", b"\xff")],
            true,
        ),
    ];
    let owner = OwnerToken::from("someone".to_owned());
    for (what, extra, owner_refused) in cases {
        let key = idem.key("orders.create").part(what).finish().unwrap();
        let redis_key = store.redis_key(&key);
        write_in_progress(&mut conn, &redis_key, &fingerprint.to_hex(), extra).await;

        let err = store.get(&key).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Corrupt(_)),
            "{what}: get gave {err:?}"
        );
        let err = idem
            .run(Call::new(key.clone(), fingerprint), async {
                Ok::<_, Error>(1)
            })
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::CorruptRecord { .. }),
            "{what}: {err:?}"
        );
        if !owner_refused {
            continue;
        }
        let before = fields(&mut conn, &redis_key).await;
        let later = Timestamp::from_millis(99_999_999_999_999);
        let results = [
            store.record_step(&key, &owner, "ledger", b"7", later).await,
            store.renew(&key, &owner, later).await,
        ];
        for result in results {
            assert!(
                matches!(result, Err(StoreError::Corrupt(_))),
                "{what}: the owner's write gave {result:?}"
            );
        }
        assert_eq!(
            fields(&mut conn, &redis_key).await,
            before,
            "{what}: a refused write changed the record"
        );
    }
}

idem_tests::backend_tests! {
    async garbage_under_a_key_is_an_error_not_a_panic,
    async corrupt_steps_are_an_error_not_a_panic,
}
