//! A completed record far over a call's longest outcome, planted in Redis, is refused before
//! it is read: the replay gets `CorruptRecord`, and this process never holds the record (nor,
//! sealed, a decryption of it). The record is grown on the server (`SETRANGE`), so that
//! planting it allocates nothing here either.

use idem_core::seal::Keyring;
use idem_core::Idempotency;
use idem_stores::redis::client as redis;
use idem_test_servers::redis::target::RedisTarget;

use crate::plant_and_measure::{call, key, refused_replay, BODY, MAX_OUTCOME};

/// Writes a live completed record of `call`'s with an outcome of [`BODY`] bytes that start
/// with `body_start` under `redis_key`, and returns its length.
async fn plant(
    target: &RedisTarget,
    redis_key: &str,
    fingerprint: &str,
    body_start: &[u8],
) -> usize {
    let mut head = format!(
        "idm1C{}:{fingerprint}7:someone2:ok14:99999999999999{BODY}:",
        fingerprint.len()
    )
    .into_bytes();
    head.extend_from_slice(body_start);
    let length = head.len() - body_start.len() + BODY;
    let mut conn = target.raw().await;
    let () = redis::cmd("SET")
        .arg(redis_key)
        .arg(&head)
        .query_async(&mut conn)
        .await
        .unwrap();
    let grown: usize = redis::cmd("SETRANGE")
        .arg(redis_key)
        .arg(length - 1)
        .arg("x")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(grown, length);
    length
}

async fn an_oversized_record_is_refused_before_it_is_read() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let idem = Idempotency::new(target.redis_store().clone());
    let key = key(&idem);
    let call = call(&key);
    let redis_key = target.redis_store().redis_key(&key);
    let length = plant(&target, &redis_key, &call.fingerprint().unwrap().to_hex(), b"\"").await;

    let reason = refused_replay(&idem, call, length).await;
    assert!(
        reason.contains(&format!("{length} bytes long"))
            && reason.contains(&MAX_OUTCOME.to_string()),
        "the reason names the size and the limit: {reason}"
    );
}

async fn a_sealed_oversized_record_is_refused_without_being_opened() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let idem =
        Idempotency::new(target.redis_store().clone()).with_sealing(Keyring::new("k1", [7; 32]));
    let key = key(&idem);
    let call = call(&key);
    let redis_key = target.redis_store().redis_key(&idem.stored_key(&key));
    // A sealed value's head: the magic, the key id, then what would be the nonce.
    let sealed_head = [&[0, b'i', b'S', 1, 2][..], b"k1", &[0; 12]].concat();
    let length = plant(
        &target,
        &redis_key,
        &call.fingerprint().unwrap().to_hex(),
        &sealed_head,
    )
    .await;

    let reason = refused_replay(&idem, call, length).await;
    assert!(
        reason.contains(&format!("{length} bytes long")),
        "refused for its size, not for failing to open: {reason}"
    );
}

idem_tests::module_tests! {
    async an_oversized_record_is_refused_before_it_is_read = alone,
    async a_sealed_oversized_record_is_refused_without_being_opened = alone,
}
