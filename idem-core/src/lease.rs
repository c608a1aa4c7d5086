//! What the engine knows of a reservation's lease while it holds it.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use tokio::sync::Notify;

use crate::Timestamp;

/// Why a lease was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Loss {
    /// The store says another owner holds the key (or no one does).
    TakenOver,
    /// No renewal reached the store before the lease passed; another caller may take over.
    Expired,
}

const HELD: u8 = 0;
const TAKEN_OVER: u8 = 1;
const EXPIRED: u8 = 2;

/// The lease deadline as last renewed, and whether the lease is known lost. Shared by the
/// renewal task, the engine and the body's [`CallContext`](crate::CallContext).
#[derive(Debug)]
pub(crate) struct Lease {
    until: AtomicU64,
    lost: AtomicU8,
    on_loss: Notify,
}

impl Lease {
    pub(crate) fn new(until: Timestamp) -> Self {
        Lease {
            until: AtomicU64::new(until.as_millis()),
            lost: AtomicU8::new(HELD),
            on_loss: Notify::new(),
        }
    }

    /// The deadline of the last renewal that reached the store.
    pub(crate) fn until(&self) -> Timestamp {
        Timestamp::from_millis(self.until.load(Ordering::SeqCst))
    }

    pub(crate) fn renewed(&self, until: Timestamp) {
        self.until.store(until.as_millis(), Ordering::SeqCst);
    }

    /// Records the loss (the first one reported stands) and wakes everyone waiting for it.
    pub(crate) fn lose(&self, loss: Loss) {
        let code = match loss {
            Loss::TakenOver => TAKEN_OVER,
            Loss::Expired => EXPIRED,
        };
        let _ = self
            .lost
            .compare_exchange(HELD, code, Ordering::SeqCst, Ordering::SeqCst);
        self.on_loss.notify_waiters();
    }

    pub(crate) fn loss(&self) -> Option<Loss> {
        match self.lost.load(Ordering::SeqCst) {
            TAKEN_OVER => Some(Loss::TakenOver),
            EXPIRED => Some(Loss::Expired),
            _ => None,
        }
    }

    /// Resolves once the lease is lost.
    pub(crate) async fn lost(&self) {
        loop {
            let notified = self.on_loss.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.loss().is_some() {
                return;
            }
            notified.await;
        }
    }
}
