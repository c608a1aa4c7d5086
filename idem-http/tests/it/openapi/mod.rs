//! The layer's contract in an OpenAPI document made with utoipa 5: generated from real layers,
//! read back by an independent OpenAPI 3.1 parser (oas3), and checked against what the layer
//! really answers. `openapi_utoipa6` runs the same cases on utoipa 6.

use idem_http::utoipa;

mod cases;
