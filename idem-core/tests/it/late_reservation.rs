//! A reservation whose answer arrives after most of its lease passed: renewed before the body
//! starts, or, when another caller took the key over meanwhile, never run.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idem_conformance::{Intercepted, Interceptor, ReferenceStore};
use idem_core::{
    store::{Claim, InProgress, OwnerToken, Record, Reservation, Store},
    Call, Error, Fingerprint, Idempotency, Key, ManualClock, StoreError,
};

use crate::support::LEASE;

/// A store whose first reservation's answer is late: the clock moves on by `delay` while it
/// travels, and with `rival`, another caller takes the key over in that time.
struct LateAnswer {
    inner: ReferenceStore,
    clock: ManualClock,
    delay: Duration,
    rival: bool,
    first: AtomicBool,
}

#[async_trait]
impl Interceptor for LateAnswer {
    fn inner(&self) -> &dyn Store {
        &self.inner
    }

    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        let answer = self.inner.reserve(key, claim).await?;
        if self.first.swap(false, Ordering::SeqCst) {
            self.clock.advance(self.delay);
            if self.rival {
                let now = claim.now() + self.delay;
                let rival = InProgress::new(
                    OwnerToken::generate(),
                    *claim.record().fingerprint(),
                    now + LEASE,
                );
                let took = self.inner.reserve(key, &Claim::new(rival, now)).await?;
                assert!(matches!(took, Reservation::TookOver { .. }), "{took:?}");
            }
        }
        Ok(answer)
    }
}

fn setup(delay: Duration, rival: bool) -> (Arc<Intercepted<LateAnswer>>, Idempotency, Call) {
    let clock = ManualClock::new();
    let store = Arc::new(Intercepted(LateAnswer {
        inner: ReferenceStore::new(),
        clock: clock.clone(),
        delay,
        rival,
        first: AtomicBool::new(true),
    }));
    let idem = Idempotency::from_arc(store.clone()).with_clock(clock);
    let key = idem.key("orders.create").part("o1").finish().unwrap();
    let call = Call::new(key, Fingerprint::of("o1").unwrap()).with_lease(LEASE);
    (store, idem, call)
}

/// The whole seconds of lease the record held when the body of `call` started.
async fn lease_left_when_the_body_starts(
    store: &Intercepted<LateAnswer>,
    idem: &Idempotency,
    call: Call,
) -> u64 {
    let key = idem.stored_key(call.key());
    let clock = idem.clock().clone();
    idem.run(call, async {
        let Some(Record::InProgress(held)) = store.get(&key).await.unwrap() else {
            panic!("the body runs while the key is held");
        };
        Ok::<_, Error>(
            held.lease_until()
                .saturating_duration_since(clock.now())
                .as_secs(),
        )
    })
    .await
    .unwrap()
    .value
}

#[tokio::test]
async fn a_reservation_answered_late_is_renewed_before_the_body_starts() {
    let (store, idem, call) = setup(LEASE * 9 / 10, false);
    assert_eq!(
        lease_left_when_the_body_starts(&store, &idem, call).await,
        LEASE.as_secs(),
        "the body starts with a whole lease, not the tenth the late answer left"
    );
}

#[tokio::test]
async fn a_reservation_answered_after_a_takeover_does_not_run_its_body() {
    let (_store, idem, call) = setup(LEASE + Duration::from_secs(1), true);
    let runs = AtomicUsize::new(0);
    let result = idem
        .run(call, async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(1)
        })
        .await;
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the key is the rival's");
    assert!(
        matches!(result, Err(Error::InProgress { .. })),
        "the rival holds it: {result:?}"
    );
}

#[tokio::test]
async fn a_reservation_answered_in_time_costs_no_extra_round_trip() {
    let (store, idem, call) = setup(LEASE / 10, false);
    assert_eq!(
        lease_left_when_the_body_starts(&store, &idem, call).await,
        (LEASE - LEASE / 10).as_secs(),
        "not renewed"
    );
}
