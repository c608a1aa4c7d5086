//! idem-core's integration tests, one module per topic, linked into one binary so that the
//! crate and its dependencies link once. The metrics module installs its recorder for its own
//! thread only (each test runs on a current-thread runtime), so it shares this process with the
//! others; the spans' tests have a process of their own (`telemetry_spans`, see Cargo.toml).

mod abort_order;
mod begun_call;
mod call_context;
mod deferred_call;
mod downstream_keys;
mod late_reservation;
mod lease_passed;
mod lookup_replay;
mod outcome_codec;
mod outcome_limit;
mod quota;
mod refused_write;
mod renewal_deadline;
mod replay_cache;
mod seal;
mod seal_refusals;
mod sealed_outcome_limit;
mod sealed_step;
mod shared_outcome;
mod step_after_lease;
mod step_names;
mod steps_value;
mod support;
mod telemetry_metrics;
mod unrecorded_step;
