//! Sealed, a stored outcome over a call's limit is refused before it is opened, even on a
//! store that does not check the limit itself.
#![cfg(feature = "seal")]

use idem_conformance::{Intercepted, Interceptor, ReferenceStore};
use idem_core::seal::Keyring;
use idem_core::{
    store::{Claim, Reservation, Store},
    Call, Error, Fingerprint, Idempotency, Key, StoreError,
};

/// A store that ignores a claim's longest outcome, as one written before it existed does.
struct Unchecking(ReferenceStore);

#[async_trait::async_trait]
impl Interceptor for Unchecking {
    fn inner(&self) -> &dyn Store {
        &self.0
    }

    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        self.0
            .reserve(key, &claim.clone().with_max_outcome(None))
            .await
    }
}

#[tokio::test]
async fn a_sealed_outcome_over_the_limit_is_not_opened() {
    let idem = Idempotency::new(Intercepted(Unchecking(ReferenceStore::default())))
        .with_sealing(Keyring::new("k1", [7; 32]));
    let call = || {
        let key = idem.key("reports.render").part("r-1").finish().unwrap();
        Call::new(key, Fingerprint::of(&"r-1").unwrap())
    };
    idem.run(call(), async { Ok::<_, Error>("x".repeat(4_000)) })
        .await
        .unwrap();

    let refused = idem
        .run(call().with_max_outcome(1_000), async {
            Ok::<_, Error>(String::new())
        })
        .await
        .unwrap_err();
    // The limit the sealing wrapper checks before opening: the call's, and the most sealing
    // adds (magic, key id, nonce, tag). The engine's own check, after opening, would name 1000.
    match refused {
        Error::CorruptRecord { reason, .. } => assert!(
            reason.ends_with("over the 1097 bytes this call replays"),
            "{reason}"
        ),
        other => panic!("expected CorruptRecord, got {other:?}"),
    }

    let replayed = idem
        .run(call().with_max_outcome(4_002), async {
            Ok::<_, Error>(String::new())
        })
        .await
        .unwrap();
    assert!(replayed.replayed);
}
