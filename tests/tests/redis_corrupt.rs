//! Garbage under a key gives `StoreError::Corrupt` / `Error::CorruptRecord`, never a panic, and
//! never runs the function.

use std::sync::atomic::{AtomicUsize, Ordering};

use idem_core::{
    Call, Completed, Error, Fingerprint, Idempotency, Outcome, OwnerToken, Store, StoreError,
    Timestamp,
};
use idem_stores::redis::client::{self as redis, aio::MultiplexedConnection};
use idem_tests::redis_target::RedisTarget;

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
        ];
        for result in results {
            assert!(
                matches!(result, Err(StoreError::Corrupt(_) | StoreError::LeaseLost)),
                "{what}: {result:?}"
            );
        }
        assert!(store.get(&key).await.is_err(), "{what}: still corrupt");

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

idem_tests::backend_tests! {
    async garbage_under_a_key_is_an_error_not_a_panic,
}
