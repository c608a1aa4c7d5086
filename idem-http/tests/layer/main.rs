//! The layer in front of a real axum server on loopback, one module per concern. One test
//! binary rather than one per file: they share the support code and build once.
//! (`metrics` and `waiters` stay binaries of their own: one installs a global metrics
//! recorder, the other counts allocations with a global allocator.)

#[path = "../support/mod.rs"]
mod support;

mod attribute_errors;
mod conflicts;
mod crafted_records;
mod encoding;
mod failures;
mod grpc;
mod keys;
mod quota_floods;
mod quotas;
mod readiness;
mod replay;
mod scopes;
mod steps;
mod storing;
mod streams;
mod validation;
