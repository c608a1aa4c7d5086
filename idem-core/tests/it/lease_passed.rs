//! A body learns its lease passed from the caller's clock, before any store refuses it: a
//! call that does not renew, or a process paused past its lease, must not go on as the owner.

use std::time::Duration;

use idem_conformance::ReferenceStore;
use idem_core::{context, Call, Error, Fingerprint, Idempotency, ManualClock};

async fn lease_seen_before_and_after_it_passes(renewed: bool) -> (bool, bool) {
    let clock = ManualClock::new();
    let idem = Idempotency::new(ReferenceStore::new()).with_clock(clock.clone());
    let key = idem.key("orders.ship").part("o1").finish().unwrap();
    let lease = Duration::from_secs(30);
    let mut call = Call::new(key, Fingerprint::of("o1").unwrap()).with_lease(lease);
    if !renewed {
        call = call.without_renewal();
    }
    idem.run(call, async {
        let ctx = context().expect("inside an idempotent body");
        let before = ctx.is_lease_lost();
        clock.advance(lease + Duration::from_secs(1));
        let after = ctx.is_lease_lost();
        // Resolves at once: the deadline is behind the clock.
        tokio::time::timeout(Duration::from_secs(5), ctx.lease_lost())
            .await
            .expect("lease_lost resolves once the lease passed");
        Ok::<_, Error>((before, after))
    })
    .await
    .map(|answered| answered.value)
    .unwrap_or_else(|error| panic!("the call: {error}"))
}

#[tokio::test]
async fn a_call_without_renewal_knows_its_lease_passed() {
    assert_eq!(
        lease_seen_before_and_after_it_passes(false).await,
        (false, true)
    );
}

#[tokio::test]
async fn a_renewed_call_paused_past_its_lease_knows_it_passed() {
    assert_eq!(
        lease_seen_before_and_after_it_passes(true).await,
        (false, true)
    );
}
