//! A body whose lease is known lost by its own clock (a process paused past it) starts no
//! further step: the step's future is never polled, so its effect does not happen twice.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use idem_conformance::ReferenceStore;
use idem_core::{step, Call, Error, Fingerprint, Idempotency, ManualClock};

use crate::support::LEASE;

#[tokio::test]
async fn a_step_after_the_lease_passed_does_not_run() {
    let clock = ManualClock::new();
    let idem = Idempotency::new(ReferenceStore::new()).with_clock(clock.clone());
    let key = idem.key("orders.ship").part("o1").finish().unwrap();
    let call = Call::new(key, Fingerprint::of("o1").unwrap()).with_lease(LEASE);
    let shipped = AtomicBool::new(false);
    let answered = idem
        .run(call, async {
            step("charge", async { Ok::<_, Error>(1_000) }).await?;
            // The process is paused past its lease: another caller may hold the key now.
            clock.advance(LEASE + Duration::from_secs(1));
            step("ship", async {
                shipped.store(true, Ordering::SeqCst);
                Ok::<_, Error>(())
            })
            .await
        })
        .await;
    assert!(
        !shipped.load(Ordering::SeqCst),
        "the step's effect happened after the lease was known lost"
    );
    match answered {
        Err(Error::NotRecorded { cause, .. }) => {
            assert!(matches!(*cause, Error::LeaseLost { .. }), "{cause:?}")
        }
        other => panic!("expected NotRecorded caused by LeaseLost, got {other:?}"),
    }
}

#[tokio::test]
async fn a_recorded_step_still_replays_after_the_lease_passed() {
    let clock = ManualClock::new();
    let idem = Idempotency::new(ReferenceStore::new()).with_clock(clock.clone());
    let key = idem.key("orders.ship").part("o2").finish().unwrap();
    let call = || Call::new(key.clone(), Fingerprint::of("o2").unwrap()).with_lease(LEASE);
    // Attempt 1 records its step, then fails: the key is kept for the same call.
    let failed = idem
        .run(call(), async {
            step("charge", async { Ok::<_, Error>(1_000) }).await?;
            Err::<u32, _>(Error::Codec("the body failed after its step".into()))
        })
        .await;
    assert!(failed.is_err());
    let seen = std::sync::Mutex::new(None);
    let _ = idem
        .run(call(), async {
            clock.advance(LEASE + Duration::from_secs(1));
            let value = step("charge", async { Ok::<_, Error>(2_000) }).await;
            *seen.lock().unwrap() = Some(value.as_ref().ok().copied());
            value
        })
        .await;
    assert_eq!(
        seen.into_inner().unwrap(),
        Some(Some(1_000)),
        "the recorded value, replayed: replaying performs nothing"
    );
}
