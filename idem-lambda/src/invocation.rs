//! The options of one invocation's call: its lease ends with the invocation.

use std::time::Duration;

use idem_core::{store::Timestamp, Call, Idempotency};
use lambda_runtime::Context;

use crate::selection::Selected;

/// The longest a reservation lasts: Lambda's longest timeout (15 minutes), and a minute for
/// clocks. A context whose deadline lies further ahead is not Lambda's, and a handler that
/// panicked under it must not hold its key for longer.
const LONGEST_INVOCATION: Duration = Duration::from_secs(16 * 60);

/// What a handler or a batch processor sets on every call.
#[derive(Clone, Debug)]
pub(crate) struct CallOptions {
    pub(crate) ttl: Duration,
}

impl Default for CallOptions {
    fn default() -> Self {
        CallOptions {
            ttl: idem_core::DEFAULT_TTL,
        }
    }
}

impl CallOptions {
    /// The call for `selected` within the invocation `context` describes: its reservation lasts
    /// until the invocation's deadline and is not renewed, so that once Lambda ended a timed-out
    /// invocation the next delivery takes the key over.
    ///
    /// A context without a deadline (a local run), or with one already past (emulators send a
    /// duration where Lambda sends a time), keeps idem's renewed lease: a lease that ended at
    /// once would let a duplicate in while the handler runs.
    pub(crate) fn call(&self, idem: &Idempotency, selected: Selected, context: &Context) -> Call {
        let call = Call::new(selected.key, selected.fingerprint).with_ttl(self.ttl);
        let now = idem.clock().now();
        let deadline = Timestamp::from_millis(context.deadline);
        if deadline > now {
            let left = deadline.saturating_duration_since(now);
            call.with_lease(left.min(LONGEST_INVOCATION))
                .without_renewal()
        } else {
            tracing::debug!(
                target: crate::TARGET,
                deadline = context.deadline,
                "the invocation's deadline is not ahead; the lease is renewed as idem's own"
            );
            call
        }
    }
}

/// The name calls are keyed under: the one configured, or the function's.
pub(crate) fn name<'a>(configured: Option<&'a str>, context: &'a Context) -> Option<&'a str> {
    configured.or_else(|| {
        let function = context.env_config.function_name.as_str();
        (!function.is_empty()).then_some(function)
    })
}
