//! One call's telemetry: its span, and its outcome counted once it ends, however it ends.

use std::sync::OnceLock;
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
    function: &'static FunctionMetrics,
    span: Span,
    /// When the call started, read only if a recorder kept its duration then.
    started: Option<Instant>,
    /// The histogram of replayed calls' durations, as the recorder gave it when asked whether
    /// it keeps durations: a replay records into it without asking again.
    replay_durations: metrics::Histogram,
    /// Whether a recorder keeps the store's reservation times, asked when the call first
    /// needs to know (a replay answered by a lookup never does).
    store_listened: OnceLock<bool>,
    outcome: Option<CallOutcome>,
    body_started: bool,
}

impl CallTelemetry {
    /// Starts the telemetry of a call whose function is named in `named` (the key in clear).
    /// Each clock is read only for a histogram a recorder keeps (a recorder may filter some
    /// out); counters cost nothing to call without one.
    pub(crate) fn start(named: &Key) -> Self {
        let function = function_metrics(named.function().unwrap_or("unknown"));
        // Asked of the replays' histogram, the outcome most calls end with where speed counts.
        let replay_durations = super::histogram(&function.durations[CallOutcome::Replayed.index()]);
        let listened = super::listens(&replay_durations);
        // Built for the subscriber to decide by the span's own name, target and fields, which
        // no question asked beforehand could name. Without one, a disabled span at once.
        let span = if super::COMPILED_IN {
            tracing::info_span!(
                target: TARGET,
                "idem.call",
                code.function.name = function.name,
                idem.key = Empty,
                idem.attempt = Empty,
                idem.fencing_token = Empty,
                idem.outcome = Empty,
                otel.status_code = Empty,
            )
        } else {
            Span::none()
        };
        CallTelemetry {
            function,
            span,
            started: listened.then(Instant::now),
            replay_durations,
            store_listened: OnceLock::new(),
            outcome: None,
            body_started: false,
        }
    }

    /// Names the call in its span by `shown`: its key, or the key's digest.
    pub(crate) fn show_key(&self, shown: &Key) {
        self.span.record("idem.key", shown.as_str());
    }

    /// Whether anything may listen to the call's store operations: a subscriber that took the
    /// call's span, one that takes DEBUG spans of some kind (the store's are DEBUG, and only
    /// they can say whether they are wanted), or a recorder that keeps `store_probe`, a
    /// histogram of the store's that its operations record (asked once per call).
    pub(crate) fn listens(&self, store_probe: &metrics::Key) -> bool {
        !self.span.is_disabled()
            || super::COMPILED_IN && tracing::level_enabled!(tracing::Level::DEBUG)
            || self.store_listens(store_probe)
    }

    fn store_listens(&self, store_probe: &metrics::Key) -> bool {
        *self
            .store_listened
            .get_or_init(|| super::listens(&super::histogram(store_probe)))
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
        super::increment(&self.function.takeovers);
    }

    /// The replay cache answered the call, or could not.
    pub(crate) fn replay_cache(&self, hit: bool) {
        let function = self.function;
        super::increment(if hit {
            &function.cache_hits
        } else {
            &function.cache_misses
        });
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
        super::increment(&self.function.calls[outcome.index()]);
        // A call that started before a recorder kept durations is counted, without one.
        if let Some(started) = self.started {
            let elapsed = super::Elapsed(started);
            if outcome == CallOutcome::Replayed {
                self.replay_durations.record(elapsed);
            } else {
                super::histogram(&self.function.durations[outcome.index()]).record(elapsed);
            }
        }
    }
}
