//! The layer's contract, put into an OpenAPI document.

use std::sync::Arc;

use http::Method;

use super::seam::{OpenApiDocument, OpenApiOperation};
use crate::config::Config;

/// What an [`IdempotencyLayer`](crate::IdempotencyLayer) answers, read from its settings by
/// [`IdempotencyLayer::openapi`](crate::IdempotencyLayer::openapi), to put into an OpenAPI
/// document of utoipa 5 or 6: see the [module](super) for what it adds.
#[derive(Clone, Debug)]
pub struct IdempotencyContract {
    config: Arc<Config>,
}

impl IdempotencyContract {
    pub(crate) fn of(config: Arc<Config>) -> Self {
        IdempotencyContract { config }
    }

    /// The layer's settings the contract is read from.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// The methods the layer protects: [`apply`](Self::apply) changes their operations only.
    pub fn methods(&self) -> &[Method] {
        &self.config.methods
    }

    /// Whether the layer refuses a request without a key (so the header is `required`).
    pub fn requires_key(&self) -> bool {
        self.config.require_key
    }

    /// Applies the contract to every operation of `openapi` whose method the layer protects
    /// (see [`apply_to_operation`](Self::apply_to_operation)), and registers the
    /// [problem schema](super::problem_schema) under [`PROBLEM_SCHEMA`](super::PROBLEM_SCHEMA)
    /// unless a schema of that name is there already. Applying it twice changes nothing more.
    ///
    /// `openapi` is a `utoipa::openapi::OpenApi` of utoipa 5 (feature `openapi`) or 6
    /// (feature `openapi-utoipa6`).
    ///
    /// Apply it to the document of the routes behind the layer only: routes outside it are
    /// not idempotent, whatever their method.
    pub fn apply<D: OpenApiDocument>(&self, openapi: &mut D) {
        openapi.apply_idempotency(self);
    }

    /// Adds the contract to `operation` (a `utoipa::openapi::path::Operation` of utoipa 5 or
    /// 6), which the layer protects:
    ///
    /// - the `Idempotency-Key` header parameter, required if the layer
    ///   [requires a key](crate::IdempotencyLayerBuilder::require_key);
    /// - the `Idempotent-Replayed` header on each of its responses that the layer stores, and
    ///   so can replay ([`store_when`](crate::IdempotencyLayerBuilder::store_when));
    /// - a response for each status of the layer's own answers, with `application/problem+json`
    ///   content referring to the [`PROBLEM_SCHEMA`](super::PROBLEM_SCHEMA) component (which
    ///   [`apply`](Self::apply) registers) and `Retry-After` where the layer sends it.
    ///
    /// What the operation documents already is kept: a header parameter of that name, a
    /// response header of that name, and a response for one of those statuses (a 400 of the
    /// handler's own, say) are left as they are. Applying it twice changes nothing more.
    pub fn apply_to_operation<O: OpenApiOperation>(&self, operation: &mut O) {
        operation.apply_idempotency(self);
    }
}
