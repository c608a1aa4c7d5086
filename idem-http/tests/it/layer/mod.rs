//! The layer in front of a real axum server on loopback, one module per concern.

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
mod stored_frames;
mod storing;
mod streams;
mod validation;
