//! The suite's tests that libtest runs, one binary: a module per topic (the `#[idempotent]`
//! attribute, the HTTP layer's and the Lambda handler's numbers and headers, sealed records)
//! and the house's rules read from the sources, each built with the features it needs.

mod attribute_behaviour;
mod attribute_fixtures;
mod attribute_identity;
mod attribute_installed;
mod attribute_kinds;
mod attribute_response_hook;
mod house;
mod replay_never_carries;
#[cfg(all(
    feature = "redis",
    feature = "postgres",
    feature = "dynamodb",
    feature = "seal"
))]
mod sealed_at_rest;
#[cfg(feature = "seal")]
mod sealed_memory_store;
mod system_numbers;
