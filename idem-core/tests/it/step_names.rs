//! Step names: a name no store can keep is refused before its step runs.

use idem_conformance::ReferenceStore;
use idem_core::{step, Call, Error, Fingerprint, Idempotency, MAX_STEP_NAME_LEN};

#[tokio::test]
async fn a_name_no_store_can_keep_is_refused_before_the_step_runs() {
    let idem = Idempotency::new(ReferenceStore::new());
    let long = "s".repeat(MAX_STEP_NAME_LEN + 1);
    for (name, why) in [
        ("", "empty"),
        ("charge\0", "control"),
        ("line\nbreak", "control"),
        (long.as_str(), "longer"),
    ] {
        let key = idem
            .key("steps")
            .part(&(name.len() as u64))
            .finish()
            .unwrap();
        let call = Call::new(key, Fingerprint::of(name).unwrap());
        let mut ran = false;
        let refused = idem
            .run(call, async {
                step(name, async {
                    ran = true;
                    Ok::<_, Error>(1)
                })
                .await
            })
            .await;
        assert!(
            matches!(&refused, Err(Error::InvalidStepName { reason, .. }) if reason.contains(why)),
            "{name:?}: {refused:?}"
        );
        assert!(!ran, "{name:?}: the step ran");
    }
    let longest = "s".repeat(MAX_STEP_NAME_LEN);
    for fine in ["charge:card/2 (retry) 請求", longest.as_str()] {
        let key = idem.key("steps").part(fine).finish().unwrap();
        let call = Call::new(key, Fingerprint::of(fine).unwrap());
        let value = idem
            .run(call, async {
                step(fine, async { Ok::<_, Error>(7) }).await
            })
            .await;
        assert_eq!(
            value.map(|v| v.value).ok(),
            Some(7),
            "{fine:?} is a name every store keeps"
        );
    }
}
