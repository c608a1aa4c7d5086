//! One call's telemetry: its span, and its outcome counted once it ends, however it ends.

use std::time::Instant;

use tracing::field::Empty;
use tracing::Span;

use super::function::{function_metrics, FunctionMetrics};
use crate::{error::Error, key::Key, TARGET};

/// How a call ended: the `outcome` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallOutcome {
    Executed,
    Replayed,
    InProgress,
    Mismatch,
    Released,
    StoredError,
    NotRecorded,
    Aborted,
    StoreUnavailable,
    QuotaExceeded,
    Corrupt,
    Cancelled,
    Failed,
}

impl CallOutcome {
    /// The outcome of a call that ended with `error` from idem.
    pub(crate) fn of(error: &Error) -> Self {
        match error {
            Error::InProgress { .. } => CallOutcome::InProgress,
            Error::Mismatch { .. } => CallOutcome::Mismatch,
            Error::Store { .. } => CallOutcome::StoreUnavailable,
            Error::QuotaExceeded { .. } | Error::StoreFull { .. } => CallOutcome::QuotaExceeded,
            Error::NotRecorded { .. } | Error::LeaseLost { .. } => CallOutcome::NotRecorded,
            Error::Aborted { .. } => CallOutcome::Aborted,
            Error::CorruptRecord { .. } => CallOutcome::Corrupt,
            _ => CallOutcome::Failed,
        }
    }

    /// Its index in [`OUTCOMES`](super::OUTCOMES), which spells it.
    fn index(self) -> usize {
        self as usize
    }

    fn is_failure(self) -> bool {
        matches!(
            self,
            CallOutcome::NotRecorded
                | CallOutcome::Aborted
                | CallOutcome::StoreUnavailable
                | CallOutcome::Corrupt
                | CallOutcome::Failed
        )
    }
}

/// Counts a call and times it when dropped, with the outcome set last (or, if none was,
/// `aborted` once the body started and `cancelled` before).
pub(crate) struct CallTelemetry {
    /// The function's metrics, when a recorder or a subscriber listened as the call started.
    function: Option<&'static FunctionMetrics>,
    span: Span,
    /// When the call started, read only if a recorder listened then.
    started: Option<Instant>,
    outcome: Option<CallOutcome>,
    body_started: bool,
}

impl CallTelemetry {
    /// Starts the telemetry of a call whose function is named in `named` (the key in clear).
    /// `probe` is a histogram a listening recorder keeps anyway: with no recorder and no
    /// subscriber, the function's metrics are not even looked up.
    pub(crate) fn start(named: &Key, probe: &metrics::Key) -> Self {
        let listened = super::listens(&super::histogram(probe));
        let traced = super::COMPILED_IN
            && tracing::span_enabled!(target: TARGET, tracing::Level::INFO, "idem.call");
        let function =
            (listened || traced).then(|| function_metrics(named.function().unwrap_or("unknown")));
        CallTelemetry {
            function,
            span: Span::none(),
            started: listened.then(Instant::now),
            outcome: None,
            body_started: false,
        }
    }

    /// Opens the call's span, which names it by `shown` (its key or the key's digest), when a
    /// subscriber wants it.
    pub(crate) fn open_span(&mut self, shown: &Key) {
        let Some(function) = self.function else {
            return;
        };
        self.span = tracing::info_span!(
            target: TARGET,
            "idem.call",
            code.function.name = function.name,
            idem.key = shown.as_str(),
            idem.attempt = Empty,
            idem.fencing_token = Empty,
            idem.outcome = Empty,
            otel.status_code = Empty,
        );
    }

    /// Whether anything listens to the call's store operations: a recorder that listened when
    /// the call started, or a subscriber that wants their spans.
    pub(crate) fn listens(&self) -> bool {
        self.started.is_some()
            || super::COMPILED_IN
                && tracing::span_enabled!(target: TARGET, tracing::Level::DEBUG, "idem.store")
    }

    /// The call's span, which its future runs in.
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// The call ended (so far) with `outcome`.
    pub(crate) fn ended(&mut self, outcome: CallOutcome) {
        self.outcome = Some(outcome);
    }

    /// The call ended with `error`; passes it on.
    pub(crate) fn failed(&mut self, error: Error) -> Error {
        self.ended(CallOutcome::of(&error));
        error
    }

    /// The body starts, as the owner of `attempt` with `fencing_token`.
    pub(crate) fn body_starts(&mut self, attempt: u32, fencing_token: u64) {
        self.body_started = true;
        self.span.record("idem.attempt", attempt);
        self.span.record("idem.fencing_token", fencing_token);
    }

    /// The call took its key over from an owner whose lease passed.
    pub(crate) fn took_over(&self) {
        if let Some(function) = self.function {
            super::increment(&function.takeovers);
        }
    }

    /// The replay cache answered the call, or could not.
    pub(crate) fn replay_cache(&self, hit: bool) {
        if let Some(function) = self.function {
            super::increment(if hit {
                &function.cache_hits
            } else {
                &function.cache_misses
            });
        }
    }
}

impl Drop for CallTelemetry {
    fn drop(&mut self) {
        let outcome = self.outcome.unwrap_or(if self.body_started {
            CallOutcome::Aborted
        } else {
            CallOutcome::Cancelled
        });
        let spelled = super::OUTCOMES[outcome.index()];
        self.span.record("idem.outcome", spelled);
        if outcome.is_failure() {
            self.span.record("otel.status_code", "ERROR");
        }
        // A call that started before a recorder was installed is not counted.
        if let (Some(function), Some(started)) = (self.function, self.started) {
            super::increment(&function.calls[outcome.index()]);
            super::histogram(&function.durations[outcome.index()]).record(super::Elapsed(started));
        }
    }
}
