//! The layer's contract in an OpenAPI document made with utoipa 6: the cases of `openapi`
//! (utoipa 5), on utoipa 6's types.

use idem_http::utoipa6 as utoipa;

#[path = "../openapi/cases.rs"]
#[allow(clippy::duplicate_mod)] // the same cases, on the crate this module names `utoipa`
mod cases;
