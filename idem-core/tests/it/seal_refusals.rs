//! Sealed records the reference store holds that do not open: a ring without the key they
//! were sealed with, an outcome moved to another key, values stored before sealing (unless
//! accepted), a changed byte or fingerprint, and a sealed value read without the keyring.
#![cfg(feature = "seal")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use idem_conformance::ReferenceStore;
use idem_core::seal::Keyring;
use idem_core::{
    store::{Claim, Completed, InProgress, Outcome, OwnerToken, Record, Store, Timestamp},
    Answered, Error, Fingerprint, Idempotency, Key, StoreError,
};

use crate::seal::{call, ring};

/// Rewrites the completed record under `key` in `raw` with `outcome` and `fingerprint`, as
/// someone with write access to the store could.
async fn rewrite(raw: &ReferenceStore, key: &Key, fingerprint: Fingerprint, outcome: Outcome) {
    raw.delete(key).await.unwrap();
    let owner = OwnerToken::generate();
    let until = Timestamp::from_millis(u64::MAX / 4);
    let claim = Claim::new(
        InProgress::new(owner.clone(), fingerprint, until),
        Timestamp::from_millis(0),
    );
    raw.reserve(key, &claim).await.unwrap();
    let record = Completed::new(fingerprint, outcome, until);
    raw.complete(key, &owner, &record).await.unwrap();
}

/// Runs the call for `email` on `idem` with a body that answers `value`.
async fn answer(idem: &Idempotency, email: &str, value: u32) -> Result<Answered<u32>, Error> {
    idem.run(call(idem, email), async move { Ok::<_, Error>(value) })
        .await
}

#[tokio::test]
async fn a_rotated_ring_replays_the_old_key_s_records_and_a_ring_without_it_refuses() {
    let raw = Arc::new(ReferenceStore::default());
    let before = Idempotency::from_arc(raw.clone()).with_sealing(Keyring::new("2026-05", [5; 32]));
    answer(&before, "carol@example.com", 7).await.unwrap();

    let rotated = Idempotency::from_arc(raw.clone())
        .with_sealing(Keyring::new("2026-11", [1; 32]).with_old("2026-05", [5; 32]));
    let replay = answer(&rotated, "carol@example.com", 8).await.unwrap();
    assert_eq!((replay.value, replay.replayed), (7, true));

    let lacking = Idempotency::from_arc(raw).with_sealing(ring());
    let refused = answer(&lacking, "carol@example.com", 9).await.unwrap_err();
    match refused {
        Error::CorruptRecord { reason, .. } => assert!(reason.contains("`2026-05`"), "{reason}"),
        other => panic!("expected CorruptRecord, got {other:?}"),
    }
}

#[tokio::test]
async fn a_sealed_outcome_moved_to_another_key_does_not_open() {
    let raw = Arc::new(ReferenceStore::default());
    let idem = Idempotency::from_arc(raw.clone()).with_sealing(ring());
    answer(&idem, "dave@example.com", 1).await.unwrap();
    let from = call(&idem, "dave@example.com");
    let Some(Record::Completed(sealed)) = raw.get(from.key()).await.unwrap() else {
        panic!("a completed record");
    };

    // Someone with write access copies dave's sealed outcome to erin's key.
    let to = call(&idem, "erin@example.com");
    rewrite(
        &raw,
        to.key(),
        *to.fingerprint().unwrap(),
        sealed.outcome().clone(),
    )
    .await;
    assert!(matches!(sealed.outcome(), Outcome::Ok(_)));

    let runs = AtomicUsize::new(0);
    let refused = idem
        .run(to, async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(2)
        })
        .await
        .unwrap_err();
    assert!(
        matches!(refused, Error::CorruptRecord { .. }),
        "{refused:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "refused, never run again");
}

#[tokio::test]
async fn values_stored_before_sealing_are_refused_unless_accepted() {
    let raw = Arc::new(ReferenceStore::default());
    let plain = Idempotency::from_arc(raw.clone());
    answer(&plain, "fay@example.com", 3).await.unwrap();
    let migrating = Idempotency::from_arc(raw.clone()).with_sealing(ring().accept_unsealed());
    let replay = answer(&migrating, "fay@example.com", 4).await.unwrap();
    assert_eq!((replay.value, replay.replayed), (3, true));
    let strict = Idempotency::from_arc(raw).with_sealing(ring());
    let refused = answer(&strict, "fay@example.com", 5).await.unwrap_err();
    assert!(
        matches!(refused, Error::CorruptRecord { .. }),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_changed_byte_an_ok_made_err_or_another_fingerprint_does_not_open() {
    let raw = Arc::new(ReferenceStore::default());
    let idem = Idempotency::from_arc(raw.clone()).with_sealing(ring());
    let email = "gus@example.com";
    idem.run(call(&idem, email), async {
        Ok::<_, Error>("ok".to_owned())
    })
    .await
    .unwrap();
    let key = call(&idem, email).key().clone();
    let Some(Record::Completed(sealed)) = raw.get(&key).await.unwrap() else {
        panic!("a completed record");
    };
    let body = sealed.outcome().body().to_vec();
    let fingerprint = *sealed.fingerprint();
    let mut flipped = body.clone();
    *flipped.last_mut().unwrap() ^= 1;
    let other = Fingerprint::of(&"someone else").unwrap();
    for (what, fingerprint, outcome) in [
        ("a changed byte", fingerprint, Outcome::ok(flipped)),
        ("an ok made err", fingerprint, Outcome::err(body.clone())),
        ("another fingerprint", other, Outcome::ok(body.clone())),
    ] {
        rewrite(&raw, &key, fingerprint, outcome).await;
        let read = idem.store().get(&key).await;
        assert!(
            matches!(read, Err(StoreError::Corrupt(_))),
            "{what}: {read:?}"
        );
    }
}

#[tokio::test]
async fn a_sealed_value_read_without_the_keyring_is_corrupt_not_a_codec_error() {
    let raw = Arc::new(ReferenceStore::default());
    let sealed = Idempotency::from_arc(raw.clone()).with_sealing(ring());
    answer(&sealed, "hal@example.com", 1).await.unwrap();
    let plain = Idempotency::from_arc(raw);
    let refused = answer(&plain, "hal@example.com", 2).await.unwrap_err();
    assert!(
        matches!(refused, Error::CorruptRecord { .. }),
        "{refused:?}"
    );
}
