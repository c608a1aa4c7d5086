//! What [`IdempotencyContract`](super::IdempotencyContract) takes, whichever utoipa made it:
//! the types of each utoipa version the crate's features enable implement these traits, the
//! same code behind both (`document/`, compiled once per version).

use super::IdempotencyContract;

/// Implemented only by the types of the utoipa versions this crate supports.
pub trait Sealed {}

/// An OpenAPI document the contract can be applied to: `utoipa::openapi::OpenApi` of utoipa 5
/// (feature `openapi`) or of utoipa 6 (feature `openapi-utoipa6`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the OpenAPI document of a utoipa that idem-http's features enable",
    label = "a document of another utoipa, or of none",
    note = "idem-http's feature `openapi` takes utoipa 5's documents, and `openapi-utoipa6` \
            utoipa 6's: enable the one of the utoipa your crate depends on (`cargo tree -i \
            utoipa` shows which); `idem_http::utoipa` and `idem_http::utoipa6` are those crates"
)]
pub trait OpenApiDocument: Sealed {
    #[doc(hidden)]
    fn apply_idempotency(&mut self, contract: &IdempotencyContract);
}

/// One operation of an OpenAPI document the contract can be applied to:
/// `utoipa::openapi::path::Operation` of utoipa 5 (feature `openapi`) or 6 (feature
/// `openapi-utoipa6`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an OpenAPI operation of a utoipa that idem-http's features enable",
    label = "an operation of another utoipa, or of none",
    note = "idem-http's feature `openapi` takes utoipa 5's operations, and `openapi-utoipa6` \
            utoipa 6's: enable the one of the utoipa your crate depends on"
)]
pub trait OpenApiOperation: Sealed {
    #[doc(hidden)]
    fn apply_idempotency(&mut self, contract: &IdempotencyContract);
}

/// A schema the layer's problem schema can be made as: `utoipa::openapi::schema::Schema` of
/// utoipa 5 (feature `openapi`) or 6 (feature `openapi-utoipa6`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a schema of a utoipa that idem-http's features enable",
    note = "idem-http's feature `openapi` makes utoipa 5's schemas, and `openapi-utoipa6` \
            utoipa 6's: enable the one of the utoipa your crate depends on"
)]
pub trait OpenApiSchema: Sealed {
    #[doc(hidden)]
    fn idempotency_problem() -> Self;
}
