//! The layer's contract, put into an OpenAPI document.

use std::sync::Arc;

use http::Method;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::{Components, OpenApi, RefOr};

use super::answers::client_errors;
use super::key_parameter::{is_key_parameter, key_parameter};
use super::problem_schema::{problem_schema, PROBLEM_SCHEMA};
use super::replayed_header::mark_replayable;
use super::responses::problem_responses;
use crate::config::Config;

/// What an [`IdempotencyLayer`](crate::IdempotencyLayer) answers, read from its settings by
/// [`IdempotencyLayer::openapi`](crate::IdempotencyLayer::openapi), to put into an OpenAPI
/// document: see the [module](super) for what it adds.
#[derive(Clone, Debug)]
pub struct IdempotencyContract {
    config: Arc<Config>,
}

impl IdempotencyContract {
    pub(crate) fn of(config: Arc<Config>) -> Self {
        IdempotencyContract { config }
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
    /// [problem schema](super::problem_schema) under [`PROBLEM_SCHEMA`] unless a schema of
    /// that name is there already. Applying it twice changes nothing more.
    ///
    /// Apply it to the document of the routes behind the layer only: routes outside it are
    /// not idempotent, whatever their method.
    pub fn apply(&self, openapi: &mut OpenApi) {
        openapi
            .components
            .get_or_insert_with(Components::new)
            .schemas
            .entry(PROBLEM_SCHEMA.to_owned())
            .or_insert_with(|| RefOr::T(problem_schema()));
        for item in openapi.paths.paths.values_mut() {
            for method in &self.config.methods {
                if let Some(operation) = operation_mut(item, method) {
                    self.apply_to_operation(operation);
                }
            }
        }
    }

    /// Adds the contract to `operation`, which the layer protects:
    ///
    /// - the `Idempotency-Key` header parameter, required if the layer
    ///   [requires a key](crate::IdempotencyLayerBuilder::require_key);
    /// - the `Idempotent-Replayed` header on each of its responses that the layer stores, and
    ///   so can replay ([`store_when`](crate::IdempotencyLayerBuilder::store_when));
    /// - a response for each status of the layer's own answers, with `application/problem+json`
    ///   content referring to the [`PROBLEM_SCHEMA`] component (which
    ///   [`apply`](Self::apply) registers) and `Retry-After` where the layer sends it.
    ///
    /// What the operation documents already is kept: a header parameter of that name, a
    /// response header of that name, and a response for one of those statuses (a 400 of the
    /// handler's own, say) are left as they are. Applying it twice changes nothing more.
    pub fn apply_to_operation(&self, operation: &mut Operation) {
        let parameters = operation.parameters.get_or_insert_with(Vec::new);
        if !parameters.iter().any(is_key_parameter) {
            parameters.push(key_parameter(self.config.require_key));
        }
        mark_replayable(&mut operation.responses, &*self.config.store_when);
        for (status, response) in problem_responses(&client_errors(&self.config)) {
            operation
                .responses
                .responses
                .entry(status.as_str().to_owned())
                .or_insert(RefOr::T(response));
        }
    }
}

/// The operation of `item` for `method`, when OpenAPI has a place for it.
fn operation_mut<'a>(item: &'a mut PathItem, method: &Method) -> Option<&'a mut Operation> {
    let operation = match *method {
        Method::GET => &mut item.get,
        Method::PUT => &mut item.put,
        Method::POST => &mut item.post,
        Method::DELETE => &mut item.delete,
        Method::OPTIONS => &mut item.options,
        Method::HEAD => &mut item.head,
        Method::PATCH => &mut item.patch,
        Method::TRACE => &mut item.trace,
        _ => return None,
    };
    operation.as_mut()
}
