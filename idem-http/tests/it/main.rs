//! The layer and its front ends on real servers on loopback, one test binary with a module
//! per topic: they share the support code and the crate links once. `actix_metrics` and
//! `waiters` stay binaries of their own (`Cargo.toml` says why).

#[macro_use]
mod support;

#[cfg(feature = "actix-web")]
mod actix_probe;
#[cfg(all(feature = "actix-web", feature = "poem", feature = "salvo"))]
mod frameworks;
mod layer;
mod metrics;
#[cfg(feature = "openapi")]
mod openapi;
#[cfg(feature = "openapi-utoipa6")]
mod openapi_utoipa6;
