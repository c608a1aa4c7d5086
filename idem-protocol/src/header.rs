//! The header names of the contract, as [`HeaderName`]s.

use http::HeaderName;

/// The request header that carries the key: `Idempotency-Key` (the IETF draft's, Stripe's).
/// gRPC calls carry it as metadata of the same name.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// The response header a server sets on an answer it replayed from its record:
/// `Idempotent-Replayed: true` (Stripe's).
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// The value of [`IDEMPOTENT_REPLAYED`] on a replay: `true`. A client reads it without regard
/// to case.
pub const REPLAYED: &str = "true";

/// The media type of every answer of the contract other than the handler's own: RFC 9457
/// problem details.
pub const PROBLEM_JSON: &str = "application/problem+json";
