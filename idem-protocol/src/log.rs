//! The `tracing` targets of idem's crates, one hierarchy under `idem`, so that
//! `RUST_LOG=idem=debug` shows them all and `RUST_LOG=idem::http=debug` one of them.
//!
//! Every crate logs under one of these constants and names no target of its own.

/// The engine and the attribute (idem-core).
pub const CORE: &str = "idem";
/// The HTTP layer (idem-http).
pub const HTTP: &str = "idem::http";
/// The client middleware (idem-client).
pub const CLIENT: &str = "idem::client";
/// The Lambda handler and SQS batches (idem-lambda).
pub const LAMBDA: &str = "idem::lambda";
/// The Redis store.
pub const REDIS: &str = "idem::redis";
/// The DynamoDB store.
pub const DYNAMODB: &str = "idem::dynamodb";
/// The PostgreSQL store.
pub const POSTGRES: &str = "idem::postgres";

/// Every target above, for filters and tests.
pub const ALL: [&str; 7] = [CORE, HTTP, CLIENT, LAMBDA, REDIS, DYNAMODB, POSTGRES];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_is_under_idem_and_distinct() {
        for (i, target) in ALL.iter().enumerate() {
            assert!(
                *target == "idem" || target.starts_with("idem::"),
                "{target}"
            );
            assert!(!ALL[..i].contains(target), "{target} twice");
        }
    }
}
