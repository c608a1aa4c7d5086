//! What idem tells operators: metrics through the [`metrics`](https://docs.rs/metrics) facade,
//! spans and events through [`tracing`](https://docs.rs/tracing).
//!
//! Nothing is exported unless the application installs a recorder (Prometheus,
//! OpenTelemetry…) or a subscriber: with none, telemetry reads no clock and opens no span,
//! and recording costs a few nanoseconds (the engine still reads its own clock for leases and
//! expiry). A duration is timed only for a histogram the recorder keeps (it may filter some
//! out): one clock read as the call or the store operation starts, one as it ends. The names
//! and labels below are a contract; keys are never labels.
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `idem_calls_total` | counter | `function`, `outcome` |
//! | `idem_call_duration_seconds` | histogram | `function`, `outcome` |
//! | `idem_takeovers_total` | counter | `function` |
//! | `idem_store_duration_seconds` | histogram | `store`, `operation` |
//! | `idem_replay_cache_hits_total` | counter | `function` |
//! | `idem_replay_cache_misses_total` | counter | `function` |
//!
//! - `function` is the function's name as its keys spell it (the attribute's `name`, or its
//!   default), or `unknown` for a key given as its digest. Past 10 000 distinct names, further
//!   ones share the label `other` (as a function named `other` does).
//! - `outcome` (see [`OUTCOMES`]): `executed` (the body ran, its `Ok` stored), `replayed` (a stored
//!   outcome returned, an error among them), `in_progress`, `mismatch`, `released` (the body
//!   returned an error and the key was freed), `stored_error` (the body returned an error that was
//!   stored for replay), `not_recorded` (the body ran but its outcome was not stored),
//!   `aborted` (the body panicked or was dropped mid-run, or the record says an earlier call
//!   did), `store_unavailable`, `quota_exceeded`, `corrupt` (a stored record could not be read),
//!   `cancelled` (the call was dropped before its body started), `failed` (anything else, a
//!   stored value that does not decode, say). A key that cannot be built fails before the call
//!   starts, and is not counted.
//! - `store` is the store's [`name`](crate::store::Store::name) (`memory`, `redis`, `dynamodb`,
//!   `postgres`); `operation` one of `reserve`, `complete`, `release`, `renew`,
//!   `record_step`, `get`, `delete`, and `lookup`: the in-process read a call makes before
//!   it reserves, which answers a replay with nothing reserved (a store whose records live
//!   across a network, Redis, PostgreSQL or DynamoDB, misses at once, and its reservation
//!   answers).
//!
//! Every call runs in an `idem.call` span (level INFO, target `idem`) with the fields
//! `code.function.name`, `idem.key` (its digest under
//! [`name_keys_by_digest`](crate::Idempotency::name_keys_by_digest)), `idem.attempt`,
//! `idem.fencing_token`, `idem.outcome` and, for failures, `otel.status_code = "ERROR"`; each
//! store operation runs in an `idem.store` span (level DEBUG) with `db.system.name` and
//! `db.operation.name`, as OpenTelemetry's conventions name them. Takeovers, lease losses,
//! releases and failures after the body ran are events inside the call's span.

mod call;
mod function;
mod store;

use std::cell::Cell;
use std::time::Instant;

pub(crate) use call::{CallOutcome, CallTelemetry};
pub(crate) use store::{probe_key, MeteredStore};

/// The counter of calls, by `function` and `outcome`.
pub const CALLS_TOTAL: &str = "idem_calls_total";
/// The histogram of call durations in seconds, by `function` and `outcome`.
pub const CALL_DURATION_SECONDS: &str = "idem_call_duration_seconds";
/// The counter of takeovers (a call that took a key over from an owner whose lease passed),
/// by `function`.
pub const TAKEOVERS_TOTAL: &str = "idem_takeovers_total";
/// The histogram of store operation durations in seconds, by `store` and `operation`.
pub const STORE_DURATION_SECONDS: &str = "idem_store_duration_seconds";
/// The counter of replays answered from the [`ReplayCache`](crate::ReplayCache), by `function`.
pub const REPLAY_CACHE_HITS_TOTAL: &str = "idem_replay_cache_hits_total";
/// The counter of calls the [`ReplayCache`](crate::ReplayCache) could not answer, by `function`.
pub const REPLAY_CACHE_MISSES_TOTAL: &str = "idem_replay_cache_misses_total";

/// Every value of the `outcome` label, in the order of the module's docs.
pub const OUTCOMES: [&str; 13] = [
    "executed",
    "replayed",
    "in_progress",
    "mismatch",
    "released",
    "stored_error",
    "not_recorded",
    "aborted",
    "store_unavailable",
    "quota_exceeded",
    "corrupt",
    "cancelled",
    "failed",
];

/// Every value of the `operation` label of [`STORE_DURATION_SECONDS`].
pub const STORE_OPERATIONS: [&str; 8] = [
    "reserve",
    "complete",
    "release",
    "renew",
    "record_step",
    "get",
    "delete",
    "lookup",
];

/// Where every metric idem records says it comes from.
static METADATA: metrics::Metadata<'static> =
    metrics::Metadata::new(crate::TARGET, metrics::Level::INFO, Some(module_path!()));

/// Whether metrics and spans are compiled in: always, but for the build
/// `scripts/bench-telemetry.sh` compares against.
const COMPILED_IN: bool = !cfg!(idem_no_telemetry);

fn increment(key: &metrics::Key) {
    if !COMPILED_IN {
        return;
    }
    metrics::with_recorder(|recorder| recorder.register_counter(key, &METADATA).increment(1));
}

/// The histogram `key` as the recorder in effect keeps it (a no-op one when none is installed).
fn histogram(key: &metrics::Key) -> metrics::Histogram {
    if !COMPILED_IN {
        return metrics::Histogram::noop();
    }
    metrics::with_recorder(|recorder| recorder.register_histogram(key, &METADATA))
}

/// Whether a recorder keeps what `histogram` records. `metrics` has no way to ask whether a
/// recorder is installed; a no-op handle never asks for the value it is given, any other
/// does. Nothing is recorded (the value is given zero times).
fn listens(histogram: &metrics::Histogram) -> bool {
    let asked = Cell::new(false);
    histogram.record_many(Asked(&asked), 0);
    asked.get()
}

/// A value that says whether it was asked for.
struct Asked<'a>(&'a Cell<bool>);

impl metrics::IntoF64 for Asked<'_> {
    fn into_f64(self) -> f64 {
        self.0.set(true);
        0.0
    }
}

/// The seconds since a start, read from the clock only when a recorder asks for them.
struct Elapsed(Instant);

impl metrics::IntoF64 for Elapsed {
    fn into_f64(self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}

#[cfg(test)]
mod tests;
