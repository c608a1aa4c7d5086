//! The contract of `#[idempotent]`, observed through annotated functions on the memory store:
//! every function counts how often its body really ran. Under `clippy::all` and
//! `unused_qualifications` so that clippy checks the generated code too.
#![deny(warnings, unused_qualifications, clippy::all)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idem_core::{idempotent, Idempotency, ManualClock};
use idem_stores::memory::MemoryStore;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Receipt {
    order: String,
    amount: u64,
    /// Which run of the body produced it: a replay returns the first run's number.
    run: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum PayError {
    /// The card was declined: final, a retry must get the same answer.
    Declined(usize),
    /// The gateway did not answer: nothing happened, a retry may run again.
    Unavailable,
    /// An idempotency failure, by HTTP status.
    Idem(u16),
}

impl PayError {
    fn is_final(&self) -> bool {
        matches!(self, PayError::Declined(_))
    }
}

impl From<idem_core::Error> for PayError {
    fn from(error: idem_core::Error) -> Self {
        PayError::Idem(error.http_status())
    }
}

/// Holds a body mid-flight until the test opens it.
#[derive(Default)]
struct Gate {
    hold: AtomicBool,
    entered: Notify,
    open: Notify,
}

impl Gate {
    fn close(&self) {
        self.hold.store(true, Ordering::SeqCst);
    }

    async fn pass(&self) {
        if self.hold.load(Ordering::SeqCst) {
            self.entered.notify_one();
            self.open.notified().await;
        }
    }

    fn open(&self) {
        self.hold.store(false, Ordering::SeqCst);
        self.open.notify_one();
    }
}

struct Payments {
    idem: Idempotency,
    runs: AtomicUsize,
    gate: Gate,
}

#[idempotent]
impl Payments {
    fn new() -> Arc<Self> {
        Self::on(Idempotency::new(MemoryStore::new()))
    }

    fn on(idem: Idempotency) -> Arc<Self> {
        Arc::new(Payments {
            idem,
            runs: AtomicUsize::new(0),
            gate: Gate::default(),
        })
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    async fn body(&self, order: &str, amount: u64) -> Receipt {
        let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        self.gate.pass().await;
        Receipt {
            order: order.to_owned(),
            amount,
            run,
        }
    }

    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    async fn charge(&self, order: &str, amount: u64) -> Result<Receipt, PayError> {
        Ok(self.body(order, amount).await)
    }

    #[idempotent(store = "self.idem", key = "order", wait = "10s", skip = "self")]
    async fn charge_waiting(&self, order: &str, amount: u64) -> Result<Receipt, PayError> {
        Ok(self.body(order, amount).await)
    }

    #[idempotent(store = "self.idem", key = "order", ttl = "1h", skip = "self")]
    async fn charge_for_an_hour(&self, order: &str, amount: u64) -> Result<Receipt, PayError> {
        Ok(self.body(order, amount).await)
    }

    /// A lease of one second, and a stable name instead of the default.
    #[idempotent(
        store = "self.idem",
        key = "order",
        lease = "1s",
        name = "payments.charge.v1",
        skip = "self"
    )]
    async fn charge_briefly(&self, order: &str, amount: u64) -> Result<Receipt, PayError> {
        Ok(self.body(order, amount).await)
    }

    /// Fingerprints `amount` only: `note` may change between retries.
    #[idempotent(
        store = "self.idem",
        key = "order",
        fingerprint = "amount",
        skip = "self"
    )]
    async fn charge_with_note(
        &self,
        order: &str,
        amount: u64,
        note: &str,
    ) -> Result<Receipt, PayError> {
        let _ = note;
        Ok(self.body(order, amount).await)
    }

    #[idempotent(store = "self.idem", scope = "tenant", key = "order", skip = "self")]
    async fn charge_for(&self, tenant: &str, order: &str) -> Result<Receipt, PayError> {
        Ok(self.body(order, 1).await)
    }

    #[idempotent(store = "self.idem", fingerprint = "order, amount")]
    async fn charge_by_arguments(&self, order: &str, amount: u64) -> Result<Receipt, PayError> {
        Ok(self.body(order, amount).await)
    }

    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    async fn refund(&self, order: &str, amount: u64) -> Result<Receipt, PayError> {
        Ok(self.body(order, amount).await)
    }

    /// The gateway is unavailable on the first run.
    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    async fn charge_flaky(&self, order: &str) -> Result<Receipt, PayError> {
        let receipt = self.body(order, 1).await;
        match receipt.run {
            1 => Err(PayError::Unavailable),
            _ => Ok(receipt),
        }
    }

    /// Order `declined` is declined (final); the gateway is unavailable on the second run.
    #[idempotent(
        store = "self.idem",
        key = "order",
        store_err = "PayError::is_final",
        skip = "self"
    )]
    async fn charge_declined(&self, order: &str) -> Result<Receipt, PayError> {
        let receipt = self.body(order, 1).await;
        match (order, receipt.run) {
            ("declined", run) => Err(PayError::Declined(run)),
            (_, 2) => Err(PayError::Unavailable),
            _ => Ok(receipt),
        }
    }

    #[idempotent(store = "self.idem", key = "order", store_err = "all", skip = "self")]
    async fn charge_storing_all(&self, order: &str) -> Result<Receipt, PayError> {
        self.body(order, 1).await;
        Err(PayError::Unavailable)
    }

    /// Panics on the first run; a panic holds the key (`on_abort = "hold"`, the default).
    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    async fn charge_panicking(&self, order: &str) -> Result<Receipt, PayError> {
        Ok(self.panicking_body(order).await)
    }

    /// Panics on the first run, which releases the key.
    #[idempotent(
        store = "self.idem",
        key = "order",
        on_abort = "release",
        skip = "self"
    )]
    async fn charge_panicking_releasing(&self, order: &str) -> Result<Receipt, PayError> {
        Ok(self.panicking_body(order).await)
    }

    /// Panics on the first run, which is recorded as the key's final outcome.
    #[idempotent(store = "self.idem", key = "order", on_abort = "fail", skip = "self")]
    async fn charge_panicking_failing(&self, order: &str) -> Result<Receipt, PayError> {
        Ok(self.panicking_body(order).await)
    }

    async fn panicking_body(&self, order: &str) -> Receipt {
        let receipt = self.body(order, 1).await;
        assert!(receipt.run > 1, "the gateway client panicked");
        receipt
    }

    /// A cancelled call releases the key.
    #[idempotent(
        store = "self.idem",
        key = "order",
        wait = "10s",
        on_abort = "release",
        skip = "self"
    )]
    async fn charge_waiting_releasing(
        &self,
        order: &str,
        amount: u64,
    ) -> Result<Receipt, PayError> {
        Ok(self.body(order, amount).await)
    }

    /// What the body learns from `idem_core::context()`: its attempt and stored key.
    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    async fn charge_in_context(&self, order: &str) -> Result<(u32, String), PayError> {
        self.body(order, 1).await;
        let ctx = idem_core::context().expect("set while the body runs");
        Ok((ctx.attempt(), ctx.key().as_str().to_owned()))
    }
}

fn receipt(order: &str, amount: u64, run: usize) -> Receipt {
    Receipt {
        order: order.to_owned(),
        amount,
        run,
    }
}

#[tokio::test]
async fn a_retry_replays_the_first_result_without_running_again() {
    let payments = Payments::new();
    let first = payments.charge("o-1", 100).await;
    let retry = payments.charge("o-1", 100).await;
    assert_eq!(first, Ok(receipt("o-1", 100, 1)));
    assert_eq!(retry, first);
    assert_eq!(payments.runs(), 1);

    assert_eq!(
        payments.charge("o-2", 100).await,
        Ok(receipt("o-2", 100, 2))
    );
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn a_duplicate_while_the_first_runs_is_told_it_is_in_progress() {
    let payments = Payments::new();
    payments.gate.close();
    let first = tokio::spawn({
        let payments = payments.clone();
        async move { payments.charge("o-1", 100).await }
    });
    payments.gate.entered.notified().await;

    assert_eq!(payments.charge("o-1", 100).await, Err(PayError::Idem(409)));

    payments.gate.open();
    assert_eq!(first.await.unwrap(), Ok(receipt("o-1", 100, 1)));
    assert_eq!(payments.runs(), 1);
}

#[tokio::test]
async fn with_wait_a_duplicate_gets_the_first_calls_result() {
    let payments = Payments::new();
    payments.gate.close();
    let first = tokio::spawn({
        let payments = payments.clone();
        async move { payments.charge_waiting("o-1", 100).await }
    });
    payments.gate.entered.notified().await;
    let duplicate = tokio::spawn({
        let payments = payments.clone();
        async move { payments.charge_waiting("o-1", 100).await }
    });
    // On this single-threaded runtime one yield lets the duplicate run up to its wait.
    tokio::task::yield_now().await;
    assert!(
        !duplicate.is_finished(),
        "the duplicate must wait for the first call"
    );

    payments.gate.open();
    assert_eq!(first.await.unwrap(), Ok(receipt("o-1", 100, 1)));
    assert_eq!(duplicate.await.unwrap(), Ok(receipt("o-1", 100, 1)));
    assert_eq!(payments.runs(), 1);
}

#[tokio::test]
async fn same_key_with_other_arguments_is_a_mismatch() {
    let payments = Payments::new();
    assert_eq!(
        payments.charge("o-1", 100).await,
        Ok(receipt("o-1", 100, 1))
    );
    assert_eq!(payments.charge("o-1", 999).await, Err(PayError::Idem(422)));
    // The record is untouched: the original call still replays.
    assert_eq!(
        payments.charge("o-1", 100).await,
        Ok(receipt("o-1", 100, 1))
    );
    assert_eq!(payments.runs(), 1);
}

#[tokio::test]
async fn without_a_key_the_arguments_are_the_key() {
    let payments = Payments::new();
    let first = payments.charge_by_arguments("o-1", 100).await;
    assert_eq!(payments.charge_by_arguments("o-1", 100).await, first);
    assert_eq!(
        payments.charge_by_arguments("o-1", 200).await,
        Ok(receipt("o-1", 200, 2))
    );
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn an_err_releases_the_key_for_a_retry() {
    let payments = Payments::new();
    assert_eq!(
        payments.charge_flaky("o-1").await,
        Err(PayError::Unavailable)
    );
    assert_eq!(payments.charge_flaky("o-1").await, Ok(receipt("o-1", 1, 2)));
    assert_eq!(payments.charge_flaky("o-1").await, Ok(receipt("o-1", 1, 2)));
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn store_err_replays_a_final_error_and_releases_the_others() {
    let payments = Payments::new();
    assert_eq!(
        payments.charge_declined("declined").await,
        Err(PayError::Declined(1))
    );
    assert_eq!(
        payments.charge_declined("declined").await,
        Err(PayError::Declined(1))
    );
    assert_eq!(payments.runs(), 1);

    // `Unavailable` is not final: released, and the retry runs.
    assert_eq!(
        payments.charge_declined("o-2").await,
        Err(PayError::Unavailable)
    );
    assert_eq!(
        payments.charge_declined("o-2").await,
        Ok(receipt("o-2", 1, 3))
    );
    assert_eq!(payments.runs(), 3);
}

#[tokio::test]
async fn store_err_all_replays_every_error() {
    let payments = Payments::new();
    assert_eq!(
        payments.charge_storing_all("o-1").await,
        Err(PayError::Unavailable)
    );
    assert_eq!(
        payments.charge_storing_all("o-1").await,
        Err(PayError::Unavailable)
    );
    assert_eq!(payments.runs(), 1);
}

async fn panic_in(
    call: impl std::future::Future<Output = Result<Receipt, PayError>> + Send + 'static,
) {
    let panicked = tokio::spawn(call).await;
    assert!(panicked.unwrap_err().is_panic());
}

#[tokio::test]
async fn a_panic_holds_the_key_until_its_lease_passes() {
    let clock = ManualClock::new();
    let payments = Payments::on(Idempotency::new(MemoryStore::new()).with_clock(clock.clone()));
    panic_in({
        let payments = payments.clone();
        async move { payments.charge_panicking("o-1").await }
    })
    .await;
    // The charge may have gone out: a retry is told it is in progress, as after a crash.
    assert_eq!(
        payments.charge_panicking("o-1").await,
        Err(PayError::Idem(409))
    );
    assert_eq!(payments.runs(), 1);

    clock.advance(idem_core::DEFAULT_LEASE + Duration::from_secs(1));
    assert_eq!(
        payments.charge_panicking("o-1").await,
        Ok(receipt("o-1", 1, 2))
    );
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn with_on_abort_release_a_panic_releases_the_key() {
    let payments = Payments::new();
    panic_in({
        let payments = payments.clone();
        async move { payments.charge_panicking_releasing("o-1").await }
    })
    .await;
    assert_eq!(
        payments.charge_panicking_releasing("o-1").await,
        Ok(receipt("o-1", 1, 2))
    );
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn with_on_abort_fail_a_panic_is_the_final_outcome() {
    let clock = ManualClock::new();
    let payments = Payments::on(Idempotency::new(MemoryStore::new()).with_clock(clock.clone()));
    panic_in({
        let payments = payments.clone();
        async move { payments.charge_panicking_failing("o-1").await }
    })
    .await;
    clock.advance(idem_core::DEFAULT_LEASE + Duration::from_secs(1));
    for _ in 0..2 {
        assert_eq!(
            payments.charge_panicking_failing("o-1").await,
            Err(PayError::Idem(500))
        );
    }
    assert_eq!(payments.runs(), 1);
}

/// Starts `charge_waiting` or `charge` for `o-1`, lets its body reach the gate and drops it.
async fn cancel_mid_body<F: std::future::Future>(payments: &Payments, call: F) {
    payments.gate.close();
    let mut call = Box::pin(call);
    tokio::select! {
        biased;
        _ = &mut call => panic!("the body is held at the gate"),
        () = payments.gate.entered.notified() => {}
    }
    drop(call);
    payments.gate.hold.store(false, Ordering::SeqCst);
}

#[tokio::test]
async fn a_cancelled_call_holds_the_key() {
    let payments = Payments::new();
    cancel_mid_body(&payments, payments.charge("o-1", 100)).await;
    assert_eq!(payments.charge("o-1", 100).await, Err(PayError::Idem(409)));
    assert_eq!(payments.runs(), 1);
}

#[tokio::test]
async fn with_on_abort_release_a_cancelled_call_releases_the_key() {
    let payments = Payments::new();
    cancel_mid_body(&payments, payments.charge_waiting_releasing("o-1", 100)).await;

    // The release is sent from a task of its own; the retry waits for it (not for the lease,
    // which is longer than `wait`) and then runs.
    assert_eq!(
        payments.charge_waiting_releasing("o-1", 100).await,
        Ok(receipt("o-1", 100, 2))
    );
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn the_body_sees_its_call_context() {
    let payments = Payments::new();
    let (attempt, key) = payments.charge_in_context("o-1").await.unwrap();
    assert_eq!(attempt, 1);
    assert!(key.ends_with("|o-1"), "{key}");
    assert!(idem_core::context().is_none(), "only inside the body");
}

#[tokio::test]
async fn a_record_expires_after_its_ttl() {
    let clock = ManualClock::new();
    let payments = Payments::on(Idempotency::new(MemoryStore::new()).with_clock(clock.clone()));
    assert_eq!(
        payments.charge_for_an_hour("o-1", 1).await,
        Ok(receipt("o-1", 1, 1))
    );

    clock.advance(Duration::from_secs(3599));
    assert_eq!(
        payments.charge_for_an_hour("o-1", 1).await,
        Ok(receipt("o-1", 1, 1))
    );
    assert_eq!(payments.runs(), 1);

    clock.advance(Duration::from_secs(2));
    assert_eq!(
        payments.charge_for_an_hour("o-1", 1).await,
        Ok(receipt("o-1", 1, 2))
    );
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn scope_separates_tenants() {
    let payments = Payments::new();
    assert_eq!(
        payments.charge_for("acme", "o-1").await,
        Ok(receipt("o-1", 1, 1))
    );
    assert_eq!(
        payments.charge_for("globex", "o-1").await,
        Ok(receipt("o-1", 1, 2))
    );
    assert_eq!(
        payments.charge_for("acme", "o-1").await,
        Ok(receipt("o-1", 1, 1))
    );
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn two_functions_with_the_same_key_do_not_collide() {
    let payments = Payments::new();
    assert_eq!(payments.charge("o-1", 5).await, Ok(receipt("o-1", 5, 1)));
    assert_eq!(payments.refund("o-1", 5).await, Ok(receipt("o-1", 5, 2)));
    assert_eq!(payments.charge("o-1", 5).await, Ok(receipt("o-1", 5, 1)));
    assert_eq!(payments.refund("o-1", 5).await, Ok(receipt("o-1", 5, 2)));
    assert_eq!(payments.runs(), 2);
}

/// Two types in one module with a method of the same name.
struct Orders(Arc<Payments>);
struct Invoices(Arc<Payments>);

#[idempotent]
impl Orders {
    #[idempotent(store = "self.0.idem", key = "id", skip = "self")]
    async fn create(&self, id: u64) -> Result<usize, PayError> {
        Ok(self.0.body("order", id).await.run)
    }
}

#[idempotent]
impl Invoices {
    #[idempotent(store = "self.0.idem", key = "id", skip = "self")]
    async fn create(&self, id: u64) -> Result<usize, PayError> {
        Ok(self.0.body("invoice", id).await.run)
    }
}

#[tokio::test]
async fn methods_of_two_types_with_the_same_name_do_not_collide() {
    let payments = Payments::new();
    let (orders, invoices) = (Orders(payments.clone()), Invoices(payments.clone()));
    assert_eq!(orders.create(7).await, Ok(1));
    assert_eq!(invoices.create(7).await, Ok(2));
    assert_eq!(orders.create(7).await, Ok(1));
    assert_eq!(invoices.create(7).await, Ok(2));
}

/// A request context that carries the handle next to data that differs on every request.
#[derive(Serialize)]
struct RequestContext {
    #[serde(skip)]
    idem: Idempotency,
    request_id: u64,
}

/// A free function whose handle comes from an argument: that argument is the root of `store`,
/// so it is left out of the fingerprint.
#[idempotent(store = "ctx.idem", key = "\"fixed\"", skip = "runs")]
async fn send_welcome_mail(
    ctx: &RequestContext,
    runs: &AtomicUsize,
    to: &str,
) -> Result<usize, PayError> {
    let _ = to;
    Ok(runs.fetch_add(1, Ordering::SeqCst) + 1)
}

#[tokio::test]
async fn the_handle_argument_is_not_fingerprinted() {
    let idem = Idempotency::new(MemoryStore::new());
    let request = |request_id| RequestContext {
        idem: idem.clone(),
        request_id,
    };
    let runs = AtomicUsize::new(0);
    assert_eq!(
        send_welcome_mail(&request(1), &runs, "a@example.com").await,
        Ok(1)
    );
    // Same key, same `to`, another request id in the context: a replay, so the context (which
    // serialises differently) is not fingerprinted.
    assert_eq!(
        send_welcome_mail(&request(2), &runs, "a@example.com").await,
        Ok(1)
    );
    // Same key, other `to`: a mismatch, so `to` is fingerprinted.
    assert_eq!(
        send_welcome_mail(&request(3), &runs, "b@example.com").await,
        Err(PayError::Idem(422))
    );
}

#[tokio::test]
async fn lease_sets_how_long_a_crashed_call_holds_the_key() {
    let clock = ManualClock::new();
    let payments = Payments::on(Idempotency::new(MemoryStore::new()).with_clock(clock.clone()));
    cancel_mid_body(&payments, payments.charge_briefly("o-1", 5)).await;
    assert_eq!(
        payments.charge_briefly("o-1", 5).await,
        Err(PayError::Idem(409))
    );
    // One second, not the default thirty: then the same call takes the key over.
    clock.advance(Duration::from_millis(1_001));
    assert_eq!(
        payments.charge_briefly("o-1", 5).await,
        Ok(receipt("o-1", 5, 2))
    );
}

#[tokio::test]
async fn name_is_the_stable_name_in_the_key() {
    let payments = Payments::new();
    payments.charge_briefly("o-1", 5).await.unwrap();
    let key = payments
        .idem
        .key("payments.charge.v1")
        .part("o-1")
        .finish()
        .unwrap();
    assert!(
        payments.idem.store().get(&key).await.unwrap().is_some(),
        "the record is under the given name: {key}"
    );
}

#[tokio::test]
async fn fingerprint_lists_the_fingerprinted_arguments() {
    let payments = Payments::new();
    let first = payments.charge_with_note("o-1", 5, "first try").await;
    assert_eq!(first, Ok(receipt("o-1", 5, 1)));
    assert_eq!(
        payments.charge_with_note("o-1", 5, "second try").await,
        first,
        "`note` is not fingerprinted: a replay"
    );
    assert_eq!(
        payments.charge_with_note("o-1", 6, "first try").await,
        Err(PayError::Idem(422)),
        "`amount` is: a mismatch"
    );
    assert_eq!(payments.runs(), 1);
}

/// A native `async fn` in a trait.
trait Charger {
    async fn charge(&self, order: &str) -> Result<usize, PayError>;
}

/// The same under `#[async_trait]`, whose boxed future the attribute wraps.
#[async_trait::async_trait]
trait BoxedCharger: Send + Sync {
    async fn charge(&self, order: &str) -> Result<usize, PayError>;
}

#[idempotent]
impl Charger for Payments {
    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    async fn charge(&self, order: &str) -> Result<usize, PayError> {
        Ok(self.body(order, 1).await.run)
    }
}

#[async_trait::async_trait]
#[idempotent]
impl BoxedCharger for Payments {
    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    async fn charge(&self, order: &str) -> Result<usize, PayError> {
        Ok(self.body(order, 1).await.run)
    }
}

#[tokio::test]
async fn trait_impls_native_and_async_trait_are_idempotent_and_named_apart() {
    let payments = Payments::new();
    assert_eq!(Charger::charge(&*payments, "o-1").await, Ok(1));
    assert_eq!(Charger::charge(&*payments, "o-1").await, Ok(1));

    let boxed: Arc<dyn BoxedCharger> = payments.clone();
    assert_eq!(boxed.charge("o-1").await, Ok(2));
    assert_eq!(boxed.charge("o-1").await, Ok(2));
    assert_eq!(payments.runs(), 2);
}

/// A generic function: each instantiation has records of its own.
#[idempotent(store = "idem", key = "id", skip = "runs")]
async fn load<T: Default + Serialize + serde::de::DeserializeOwned>(
    idem: &Idempotency,
    runs: &AtomicUsize,
    id: u64,
) -> Result<(T, usize), PayError> {
    let _ = id;
    Ok((T::default(), runs.fetch_add(1, Ordering::SeqCst) + 1))
}

#[tokio::test]
async fn instantiations_of_a_generic_function_do_not_collide() {
    let idem = Idempotency::new(MemoryStore::new());
    let runs = AtomicUsize::new(0);
    assert_eq!(
        load::<String>(&idem, &runs, 1).await,
        Ok((String::new(), 1))
    );
    assert_eq!(load::<u64>(&idem, &runs, 1).await, Ok((0, 2)));
    assert_eq!(
        load::<String>(&idem, &runs, 1).await,
        Ok((String::new(), 1))
    );
    assert_eq!(load::<u64>(&idem, &runs, 1).await, Ok((0, 2)));
}

/// A generic type: its methods are named after the impl as written, with the type `T` stands
/// for in the call.
struct Drawer<T>(Idempotency, std::marker::PhantomData<T>);

#[idempotent]
impl<T: Default + Serialize + serde::de::DeserializeOwned> Drawer<T> {
    #[idempotent(store = "self.0", key = "id", skip = "self")]
    async fn open(&self, id: u64) -> Result<T, PayError> {
        let _ = id;
        Ok(T::default())
    }
}

/// Whether `idem`'s store has a record under function name `name` and key part `part`.
async fn recorded<P: idem_core::KeyPart + ?Sized>(
    idem: &Idempotency,
    name: &str,
    part: &P,
) -> bool {
    let key = idem.key(name).part(part).finish().unwrap();
    idem.store().get(&key).await.unwrap().is_some()
}

/// The default name is spelt from the source, not by the compiler: written out here in full, so
/// that any change to the rule (which would orphan every stored record) fails this test.
#[tokio::test]
async fn default_names_are_the_module_the_impl_the_function_and_the_instantiation() {
    let payments = Payments::new();
    let idem = &payments.idem;
    payments.charge("o-1", 1).await.unwrap();
    Charger::charge(&*payments, "o-2").await.unwrap();
    BoxedCharger::charge(&*payments, "o-3").await.unwrap();
    let runs = AtomicUsize::new(0);
    load::<String>(idem, &runs, 4).await.unwrap();
    load::<u64>(idem, &runs, 4).await.unwrap();
    Drawer::<u8>(idem.clone(), std::marker::PhantomData)
        .open(5)
        .await
        .unwrap();
    let request = RequestContext {
        idem: idem.clone(),
        request_id: 1,
    };
    send_welcome_mail(&request, &runs, "a@example.com")
        .await
        .unwrap();

    for (name, part) in [
        ("attribute_behaviour::Payments::charge", "o-1"),
        ("attribute_behaviour::<Payments as Charger>::charge", "o-2"),
        (
            "attribute_behaviour::<Payments as BoxedCharger>::charge",
            "o-3",
        ),
        ("attribute_behaviour::send_welcome_mail", "fixed"),
    ] {
        assert!(recorded(idem, name, part).await, "no record under {name}");
    }
    for (name, part) in [
        ("attribute_behaviour::load[T = alloc::string::String]", 4u64),
        ("attribute_behaviour::load[T = u64]", 4),
        ("attribute_behaviour::Drawer<T>::open[T = u8]", 5),
    ] {
        assert!(recorded(idem, name, &part).await, "no record under {name}");
    }
}
