//! A call in two halves: what can be answered without waiting (a replay found before anything
//! is claimed), and the rest, for a caller that builds the body only when it may run.

use std::fmt;

use crate::call::arguments::Resolved;
use crate::call::{Answered, Call};
use crate::fingerprint::Fingerprint;
use crate::telemetry::CallTelemetry;

/// What [`Idempotency::begin`](crate::Idempotency::begin) made of a call without waiting.
#[must_use = "a pending call runs only through Idempotency::run_pending"]
pub enum Begun<T, E> {
    /// The call's answer: a replay of its completed record, found in the replay cache or by
    /// the store's in-process lookup (or refused there: another request under the key, a
    /// corrupt record), or why it failed before anything was claimed.
    Answered(Result<Answered<T>, E>),
    /// Nothing to replay without asking the store: run it with [`Idempotency::run_pending`](crate::Idempotency::run_pending).
    Pending(PendingCall),
}

impl<T: fmt::Debug, E: fmt::Debug> fmt::Debug for Begun<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Begun::Answered(answered) => f.debug_tuple("Answered").field(answered).finish(),
            Begun::Pending(pending) => f.debug_tuple("Pending").field(pending).finish(),
        }
    }
}

/// A call that [`Idempotency::begin`](crate::Idempotency::begin) could not answer at once, its fingerprint computed: it
/// reserves its key when run. Counted, and traced, as one call with its beginning; dropped
/// without running, it is counted as cancelled.
pub struct PendingCall(
    // Boxed, so that a `Begun` holding a replay stays as small as the replay.
    pub(crate) Box<Pending>,
);

/// What a pending call carries from its first half to its second.
pub(crate) struct Pending {
    pub(crate) call: Resolved,
    pub(crate) telemetry: CallTelemetry,
    /// The handle that began it, which alone may run it.
    pub(crate) began_on: usize,
}

impl PendingCall {
    /// The call as the store keeps it: its key shown by its digest under
    /// `Idempotency::name_keys_by_digest` (feature `seal`).
    pub fn call(&self) -> &Call {
        &self.0.call
    }

    /// The call's fingerprint as stored (keyed under a key digest secret): computed by now,
    /// even for a [deferred](Call::deferred) call.
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.0.call.fingerprint
    }
}

impl fmt::Debug for PendingCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingCall")
            .field("key", &self.0.call.key)
            .field("fingerprint", &self.0.call.fingerprint)
            .finish_non_exhaustive()
    }
}
