//! The layer's HTTP contract in the OpenAPI document of the API behind it, made with
//! [utoipa](https://docs.rs/utoipa/5): the `Idempotency-Key` header, the
//! `Idempotent-Replayed` header of replays, and the layer's problem answers.
//!
//! [`IdempotencyLayer::openapi`](crate::IdempotencyLayer::openapi) reads the contract from the
//! layer itself, so that the document says what the layer does:
//! [`IdempotencyContract::apply`] adds it to every operation whose method the layer
//! protects ([`methods`](crate::IdempotencyLayerBuilder::methods): POST and PATCH by
//! default) and registers the problem schema; [`IdempotencyContract::apply_to_operation`]
//! adds it to one operation.
//!
//! ```
//! use idem_core::Idempotency;
//! use idem_http::IdempotencyLayer;
//! use idem_stores::memory::MemoryStore;
//! use utoipa::openapi::path::{HttpMethod, OperationBuilder, PathItem};
//! use utoipa::openapi::{InfoBuilder, OpenApiBuilder, PathsBuilder, ResponseBuilder};
//!
//! let layer = IdempotencyLayer::builder(Idempotency::new(MemoryStore::new()))
//!     .require_key(true)
//!     .build();
//!
//! // The document of the routes behind the layer, however it was made: by hand here, or by
//! // `#[derive(utoipa::OpenApi)]` and `#[utoipa::path]`.
//! let create_payment = OperationBuilder::new()
//!     .response("201", ResponseBuilder::new().description("The payment."));
//! let mut openapi = OpenApiBuilder::new()
//!     .info(InfoBuilder::new().title("Payments").version("1.0.0"))
//!     .paths(PathsBuilder::new().path("/payments", PathItem::new(HttpMethod::Post, create_payment)))
//!     .build();
//!
//! layer.openapi().apply(&mut openapi);
//!
//! let json: serde_json::Value = serde_json::from_str(&openapi.to_json().unwrap()).unwrap();
//! let operation = &json["paths"]["/payments"]["post"];
//! assert_eq!(operation["parameters"][0]["name"], "Idempotency-Key");
//! assert_eq!(operation["parameters"][0]["required"], true);
//! assert!(operation["responses"]["201"]["headers"]["Idempotent-Replayed"].is_object());
//! assert!(operation["responses"]["409"]["headers"]["Retry-After"].is_object());
//! assert!(json["components"]["schemas"]["IdempotencyProblem"].is_object());
//! ```
//!
//! # What it adds
//!
//! To each protected operation:
//!
//! - the **`Idempotency-Key` header parameter**: a string of 1 to
//!   [`MAX_HEADER_KEY_LEN`](crate::MAX_HEADER_KEY_LEN) characters, `required` when the layer
//!   [requires a key](crate::IdempotencyLayerBuilder::require_key);
//! - the **`Idempotent-Replayed` header** on each response the operation documents whose
//!   status the layer stores ([`store_when`](crate::IdempotencyLayerBuilder::store_when),
//!   [`stored_by_default`](crate::stored_by_default) unless set), since a retry can get that
//!   response again: `201` and `2XX`, say, but not `409` or `default`;
//! - a **response for each status the layer answers with** on its own, each with
//!   `application/problem+json` content referring to the [`PROBLEM_SCHEMA`] component
//!   (`IdempotencyProblem`), a description naming each case's [`problem`](crate::problem)
//!   type, and an example of each:
//!
//! | status | cases | `Retry-After` |
//! |---|---|---|
//! | 400 | `KEY_INVALID`, `BODY_UNREADABLE`; `KEY_MISSING` when the layer requires a key; `UNSCOPED` unless [`unscoped`](crate::IdempotencyLayerBuilder::unscoped) lets such requests through or shares them | |
//! | 409 | `IN_PROGRESS` | at most the layer's [`retry_after`](crate::IdempotencyLayerBuilder::retry_after), in whole seconds |
//! | 410 | `RESPONSE_NOT_KEPT`, with `Idempotent-Replayed` (it is read from the key's record) | |
//! | 413 | `BODY_TOO_LARGE` | |
//! | 422 | `KEY_REUSED`, or under 400 or 409 as [`mismatch_status`](crate::IdempotencyLayerBuilder::mismatch_status) says | |
//! | 429 | `QUOTA_EXCEEDED`, only when the layer has a [`quota`](crate::IdempotencyLayerBuilder::quota): without one it never answers it | when the quota may have room |
//!
//! The layer's server errors (500, 503) and the 406 of a replay in a coding the retry does not
//! accept are not added: like any server's failures, they are not the operation's contract.
//!
//! What the operation documents already is kept as it is: its own `Idempotency-Key`
//! parameter, its own `Idempotent-Replayed` header, and its own response for one of those
//! statuses (a 400 for a body that fails validation, say, or a 409 of its own) win over the
//! layer's. Applying the contract twice changes nothing more.

mod answers;
mod contract;
mod header_case;
mod key_parameter;
mod problem_schema;
mod replayed_header;
mod responses;

pub use contract::IdempotencyContract;
pub use problem_schema::{problem_schema, PROBLEM_SCHEMA};
