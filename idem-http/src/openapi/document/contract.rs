//! The layer's contract put into one utoipa version's document: what
//! [`IdempotencyContract`]'s methods do to that version's types.

use http::Method;

use super::compat;
use super::key_parameter::{is_key_parameter, key_parameter};
use super::problem_schema::problem_schema;
use super::replayed_header::mark_replayable;
use super::responses::problem_responses;
use super::utoipa::openapi::path::{Operation, PathItem};
use super::utoipa::openapi::schema::Schema;
use super::utoipa::openapi::{Components, OpenApi, RefOr};
use crate::openapi::answers::client_errors;
use crate::openapi::seam::{OpenApiDocument, OpenApiOperation, OpenApiSchema, Sealed};
use crate::openapi::{IdempotencyContract, PROBLEM_SCHEMA};

impl Sealed for OpenApi {}
impl Sealed for Operation {}
impl Sealed for Schema {}

impl OpenApiDocument for OpenApi {
    fn apply_idempotency(&mut self, contract: &IdempotencyContract) {
        self.components
            .get_or_insert_with(Components::new)
            .schemas
            .entry(PROBLEM_SCHEMA.to_owned())
            .or_insert_with(|| RefOr::T(problem_schema()));
        for item in self.paths.paths.values_mut() {
            for method in contract.methods() {
                if let Some(operation) = operation_mut(item, method) {
                    operation.apply_idempotency(contract);
                }
            }
        }
    }
}

impl OpenApiOperation for Operation {
    fn apply_idempotency(&mut self, contract: &IdempotencyContract) {
        let config = contract.config();
        let parameters = self.parameters.get_or_insert_with(Vec::new);
        if !parameters
            .iter()
            .filter_map(compat::parameter)
            .any(is_key_parameter)
        {
            parameters.push(compat::parameter_entry(key_parameter(config.require_key)));
        }
        mark_replayable(&mut self.responses, &*config.store_when);
        for (status, response) in problem_responses(&client_errors(config)) {
            self.responses
                .responses
                .entry(status.as_str().to_owned())
                .or_insert(RefOr::T(response));
        }
    }
}

impl OpenApiSchema for Schema {
    fn idempotency_problem() -> Self {
        problem_schema()
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
