//! A stored outcome over the size a call replays is refused as corrupt, before it is decoded.

use idem_conformance::ReferenceStore;
use idem_core::{Call, Error, Fingerprint, Idempotency};

fn call(idem: &Idempotency) -> Call {
    let key = idem.key("reports.render").part("r-1").finish().unwrap();
    Call::new(key, Fingerprint::of(&"r-1").unwrap())
}

#[tokio::test]
async fn an_outcome_over_the_limit_is_not_replayed() {
    let idem = Idempotency::new(ReferenceStore::default());
    let stored = idem
        .run(call(&idem), async { Ok::<_, Error>("x".repeat(1_000)) })
        .await
        .unwrap();
    assert!(!stored.replayed);

    let refused = idem
        .run(call(&idem).with_max_outcome(1_001), async {
            Ok::<_, Error>(String::new())
        })
        .await
        .unwrap_err();
    match refused {
        Error::CorruptRecord { reason, .. } => {
            assert_eq!(
                reason,
                "the stored outcome is 1002 bytes long, over the 1001 bytes this call replays"
            );
        }
        other => panic!("expected CorruptRecord, got {other:?}"),
    }

    let replayed = idem
        .run(call(&idem).with_max_outcome(1_002), async {
            Ok::<_, Error>(String::new())
        })
        .await
        .unwrap();
    assert!(replayed.replayed);
    assert_eq!(replayed.value.len(), 1_000);
}
