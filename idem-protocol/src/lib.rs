//! The `Idempotency-Key` contract, defined once for every crate of idem that speaks it: the
//! server's layer (idem-http), the client's middleware (idem-client), the Lambda handler
//! (idem-lambda), the engine (idem-core) and the `idem` command.
//!
//! ```
//! use idem_protocol::{header, key, problem::ProblemType, scope};
//!
//! // The header a client sends, as the server reads it.
//! assert_eq!(header::IDEMPOTENCY_KEY, "idempotency-key");
//! assert_eq!(key::parse(br#""8e03978e-40d5""#).unwrap(), "8e03978e-40d5");
//!
//! // The answer a duplicate in flight gets, on every front end.
//! let in_progress = ProblemType::InProgress;
//! assert_eq!(in_progress.status(), 409);
//! assert_eq!(ProblemType::from_uri(in_progress.uri()), Some(in_progress));
//! assert_eq!(in_progress.lambda_error_type(), "IdempotencyAlreadyInProgressError");
//!
//! // The scope a request's `Authorization` puts its keys in:
//! // printf '%s' 'bearer abc' | sha256sum
//! assert_eq!(
//!     scope::authorization_scope([&b"Bearer abc"[..]]).unwrap(),
//!     "46e38e9ce4c432c3ca84636e27ba624263cfe0e4ad78886dcbad9942a0f3f36a",
//! );
//! ```
//!
//! It depends on `http`, `sha2` and `hmac` only, so that a client can speak the contract
//! without the engine.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod header;
pub mod key;
pub mod log;
pub mod problem;
pub mod scope;
