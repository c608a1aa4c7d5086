//! What the `#[idempotent]` test files share: a payments service whose every function counts
//! how often its body really ran, and a gate that holds a body mid-flight.
// Each test file uses a part of these.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use idem_core::{idempotent, Idempotency};
use idem_stores::memory::MemoryStore;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Receipt {
    pub(crate) order: String,
    pub(crate) amount: u64,
    /// Which run of the body produced it: a replay returns the first run's number.
    pub(crate) run: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum PayError {
    /// The card was declined: final, a retry must get the same answer.
    Declined(usize),
    /// The gateway did not answer: nothing happened, a retry may run again.
    Unavailable,
    /// An idempotency failure, by HTTP status.
    Idem(u16),
}

impl PayError {
    pub(crate) fn is_final(&self) -> bool {
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
pub(crate) struct Gate {
    pub(crate) hold: AtomicBool,
    pub(crate) entered: Notify,
    pub(crate) open: Notify,
}

impl Gate {
    pub(crate) fn close(&self) {
        self.hold.store(true, Ordering::SeqCst);
    }

    pub(crate) async fn pass(&self) {
        if self.hold.load(Ordering::SeqCst) {
            self.entered.notify_one();
            self.open.notified().await;
        }
    }

    pub(crate) fn open(&self) {
        self.hold.store(false, Ordering::SeqCst);
        self.open.notify_one();
    }
}

pub(crate) struct Payments {
    pub(crate) idem: Idempotency,
    pub(crate) runs: AtomicUsize,
    pub(crate) gate: Gate,
}

#[idempotent]
impl Payments {
    pub(crate) fn new() -> Arc<Self> {
        Self::on(Idempotency::new(MemoryStore::new()))
    }

    pub(crate) fn on(idem: Idempotency) -> Arc<Self> {
        Arc::new(Payments {
            idem,
            runs: AtomicUsize::new(0),
            gate: Gate::default(),
        })
    }

    pub(crate) fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    pub(crate) async fn body(&self, order: &str, amount: u64) -> Receipt {
        let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        self.gate.pass().await;
        Receipt {
            order: order.to_owned(),
            amount,
            run,
        }
    }

    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    pub(crate) async fn charge(&self, order: &str, amount: u64) -> Result<Receipt, PayError> {
        Ok(self.body(order, amount).await)
    }

    #[idempotent(store = "self.idem", key = "order", wait = "10s", skip = "self")]
    pub(crate) async fn charge_waiting(
        &self,
        order: &str,
        amount: u64,
    ) -> Result<Receipt, PayError> {
        Ok(self.body(order, amount).await)
    }

    #[idempotent(store = "self.idem", key = "order", ttl = "1h", skip = "self")]
    pub(crate) async fn charge_for_an_hour(
        &self,
        order: &str,
        amount: u64,
    ) -> Result<Receipt, PayError> {
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
    pub(crate) async fn charge_briefly(
        &self,
        order: &str,
        amount: u64,
    ) -> Result<Receipt, PayError> {
        Ok(self.body(order, amount).await)
    }

    /// Fingerprints `amount` only: `note` may change between retries.
    #[idempotent(
        store = "self.idem",
        key = "order",
        fingerprint = "amount",
        skip = "self"
    )]
    pub(crate) async fn charge_with_note(
        &self,
        order: &str,
        amount: u64,
        note: &str,
    ) -> Result<Receipt, PayError> {
        let _ = note;
        Ok(self.body(order, amount).await)
    }

    #[idempotent(store = "self.idem", scope = "tenant", key = "order", skip = "self")]
    pub(crate) async fn charge_for(&self, tenant: &str, order: &str) -> Result<Receipt, PayError> {
        Ok(self.body(order, 1).await)
    }

    #[idempotent(store = "self.idem", fingerprint = "order, amount")]
    pub(crate) async fn charge_by_arguments(
        &self,
        order: &str,
        amount: u64,
    ) -> Result<Receipt, PayError> {
        Ok(self.body(order, amount).await)
    }

    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    pub(crate) async fn refund(&self, order: &str, amount: u64) -> Result<Receipt, PayError> {
        Ok(self.body(order, amount).await)
    }

    /// The gateway is unavailable on the first run.
    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    pub(crate) async fn charge_flaky(&self, order: &str) -> Result<Receipt, PayError> {
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
    pub(crate) async fn charge_declined(&self, order: &str) -> Result<Receipt, PayError> {
        let receipt = self.body(order, 1).await;
        match (order, receipt.run) {
            ("declined", run) => Err(PayError::Declined(run)),
            (_, 2) => Err(PayError::Unavailable),
            _ => Ok(receipt),
        }
    }

    #[idempotent(store = "self.idem", key = "order", store_err = "all", skip = "self")]
    pub(crate) async fn charge_storing_all(&self, order: &str) -> Result<Receipt, PayError> {
        self.body(order, 1).await;
        Err(PayError::Unavailable)
    }

    /// Panics on the first run; a panic holds the key (`on_abort = "hold"`, the default).
    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    pub(crate) async fn charge_panicking(&self, order: &str) -> Result<Receipt, PayError> {
        Ok(self.panicking_body(order).await)
    }

    /// Panics on the first run, which releases the key.
    #[idempotent(
        store = "self.idem",
        key = "order",
        on_abort = "release",
        skip = "self"
    )]
    pub(crate) async fn charge_panicking_releasing(
        &self,
        order: &str,
    ) -> Result<Receipt, PayError> {
        Ok(self.panicking_body(order).await)
    }

    /// Panics on the first run, which is recorded as the key's final outcome.
    #[idempotent(store = "self.idem", key = "order", on_abort = "fail", skip = "self")]
    pub(crate) async fn charge_panicking_failing(&self, order: &str) -> Result<Receipt, PayError> {
        Ok(self.panicking_body(order).await)
    }

    pub(crate) async fn panicking_body(&self, order: &str) -> Receipt {
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
    pub(crate) async fn charge_waiting_releasing(
        &self,
        order: &str,
        amount: u64,
    ) -> Result<Receipt, PayError> {
        Ok(self.body(order, amount).await)
    }

    /// What the body learns from `idem_core::context()`: its attempt and stored key.
    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    pub(crate) async fn charge_in_context(&self, order: &str) -> Result<(u32, String), PayError> {
        self.body(order, 1).await;
        let ctx = idem_core::context().expect("set while the body runs");
        Ok((ctx.attempt(), ctx.key().as_str().to_owned()))
    }
}

pub(crate) fn receipt(order: &str, amount: u64, run: usize) -> Receipt {
    Receipt {
        order: order.to_owned(),
        amount,
        run,
    }
}
