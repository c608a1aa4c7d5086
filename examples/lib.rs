//! The examples of idem live beside this file, one per `[[example]]`. The library holds only
//! README.md's snippets, compiled and run as its doctests, so that the README stays true.

/// README.md, whose Rust snippets are this crate's doctests. They need the HTTP layer, the
/// client middleware, the Redis store, sealing, the Prometheus exporter, idem-lambda (on the
/// DynamoDB store), actix-web and utoipa; the snippets that would reach a server are compiled, not run.
#[cfg(all(
    doctest,
    feature = "client",
    feature = "redis",
    feature = "seal",
    feature = "metrics",
    feature = "lambda",
    feature = "actix",
    feature = "openapi"
))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDocTests;
