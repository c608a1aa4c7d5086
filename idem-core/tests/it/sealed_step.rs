//! A step value sealed by another handle, resumed by a handle without the keyring: a corrupt
//! record that says why, not a decoding error.

use std::sync::Arc;
use std::time::Duration;

use idem_conformance::ReferenceStore;
use idem_core::{
    step,
    store::{Claim, InProgress, OwnerToken, Steps, Store},
    Call, Clock, Error, Fingerprint, Idempotency, ManualClock,
};

#[tokio::test]
async fn a_sealed_step_value_without_a_keyring_is_a_corrupt_record() {
    let store = Arc::new(ReferenceStore::new());
    let clock = ManualClock::new();
    let idem = Idempotency::from_arc(store.clone()).with_clock(clock.clone());
    let key = idem.key("checkout").part("o1").finish().unwrap();
    let fingerprint = Fingerprint::of("o1").unwrap();
    let lease = Duration::from_secs(30);
    // An earlier attempt, by a handle that seals, recorded `charge` and died.
    let now = clock.now();
    let sealed = [&[0, b'i', b'S', 1][..], b"ciphertext"].concat();
    let steps = Steps::new()
        .with_step("charge", sealed)
        .with_kept_until(now + Duration::from_secs(3_600));
    let crashed =
        InProgress::new(OwnerToken::generate(), fingerprint, now + lease).with_steps(steps);
    store
        .reserve(&idem.stored_key(&key), &Claim::new(crashed, now))
        .await
        .unwrap();
    clock.advance(lease + Duration::from_secs(1));

    let mut ran = false;
    let result = idem
        .run(Call::new(key, fingerprint).with_lease(lease), async {
            step("charge", async {
                ran = true;
                Ok::<_, Error>("ch_2".to_owned())
            })
            .await
        })
        .await;
    assert!(!ran, "a recorded step never runs again");
    assert!(
        matches!(&result, Err(Error::CorruptRecord { reason, .. }) if reason.contains("sealed")),
        "{result:?}"
    );
}
