//! The layer's HTTP contract in the OpenAPI document of the API behind it, made with
//! [utoipa](https://docs.rs/utoipa) 6 (feature `openapi-utoipa6`) or 5 (feature `openapi`):
//! the `Idempotency-Key` header, the `Idempotent-Replayed` header of replays, and the layer's
//! problem answers.
//!
//! Enable the feature of the utoipa your crate depends on (`cargo tree -i utoipa`): a document
//! of another utoipa is another type, which [`IdempotencyContract::apply`] refuses with a
//! message naming the feature. Both can be on at once. The crates are re-exported as
//! [`idem_http::utoipa`](crate::utoipa) (5) and [`idem_http::utoipa6`](crate::utoipa6) (6),
//! to name the version idem-http was built with.
//!
//! [`IdempotencyLayer::openapi`](crate::IdempotencyLayer::openapi) reads the contract from the
//! layer itself, so that the document says what the layer does:
//! [`IdempotencyContract::apply`] adds it to every operation whose method the layer
//! protects ([`methods`](crate::IdempotencyLayerBuilder::methods): POST and PATCH by
//! default) and registers the problem schema; [`IdempotencyContract::apply_to_operation`]
//! adds it to one operation.
//!
//! ```
//! # #[cfg(feature = "openapi-utoipa6")] {
//! use idem_core::Idempotency;
//! use idem_http::IdempotencyLayer;
//! use idem_stores::memory::MemoryStore;
//! use idem_http::utoipa6::openapi::path::{HttpMethod, OperationBuilder, PathItem};
//! use idem_http::utoipa6::openapi::{InfoBuilder, OpenApiBuilder, PathsBuilder, ResponseBuilder};
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
//! # }
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
mod seam;
// Each loads the files of `document/` on its utoipa's types: one code, compiled once per version.
#[cfg(feature = "openapi")]
#[allow(clippy::duplicate_mod)]
mod utoipa5;
#[cfg(feature = "openapi-utoipa6")]
#[allow(clippy::duplicate_mod)]
mod utoipa6;

pub use contract::IdempotencyContract;
pub use seam::{OpenApiDocument, OpenApiOperation, OpenApiSchema};

/// The name the layer's problem document schema is registered under in the document's
/// components (`#/components/schemas/IdempotencyProblem`).
pub const PROBLEM_SCHEMA: &str = "IdempotencyProblem";

/// The schema of the layer's answers, as a `utoipa::openapi::schema::Schema` of utoipa 5 or 6
/// (whichever the caller asks for): an RFC 9457 problem document, served as
/// `application/problem+json`. Its `type` is one of the URIs of [`problem`](crate::problem),
/// which never change; `detail` names the key.
///
/// [`IdempotencyContract::apply`] registers it under [`PROBLEM_SCHEMA`]; register it yourself
/// when you only use [`apply_to_operation`](IdempotencyContract::apply_to_operation):
///
/// ```
/// # #[cfg(feature = "openapi-utoipa6")] {
/// use idem_http::utoipa6::openapi::schema::Schema;
/// let schema: Schema = idem_http::openapi::problem_schema();
/// # let _ = schema; }
/// ```
pub fn problem_schema<S: OpenApiSchema>() -> S {
    S::idempotency_problem()
}
