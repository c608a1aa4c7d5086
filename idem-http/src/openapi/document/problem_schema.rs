//! The component schema of the layer's problem documents.

use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaFormat, Type};

use crate::response::problem::ProblemType;

/// The name the layer's problem document schema is registered under in the document's
/// components (`#/components/schemas/IdempotencyProblem`).
pub const PROBLEM_SCHEMA: &str = "IdempotencyProblem";

/// The schema of the layer's answers: an RFC 9457 problem document, served as
/// `application/problem+json`. Its `type` is one of the URIs of
/// [`problem`](crate::problem), which never change; `detail` names the key.
///
/// [`IdempotencyContract::apply`](super::IdempotencyContract::apply) registers it under
/// [`PROBLEM_SCHEMA`]; register it yourself when you only use
/// [`apply_to_operation`](super::IdempotencyContract::apply_to_operation).
pub fn problem_schema() -> Schema {
    let text = |description: &str| {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some(description))
    };
    let status = |description: &str| {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .description(Some(description))
    };
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .title(Some(PROBLEM_SCHEMA))
        .description(Some(
            "An RFC 9457 problem document: the idempotency layer's own answer, not the \
             handler's.",
        ))
        .property(
            "type",
            text(&format!(
                "Which case this is: a URI that never changes, whose page documents it \
                 (`{}`, say). Match on it, not on `title` or `detail`.",
                ProblemType::InProgress.uri()
            ))
            .format(Some(SchemaFormat::Custom("uri".to_owned()))),
        )
        .property("title", text("The case, in a few words."))
        .property("status", status("The HTTP status of the answer."))
        .property(
            "detail",
            text("What happened to this request, naming its key, and what to do."),
        )
        .property(
            "handled_status",
            status(
                "For a response not kept (`RESPONSE_NOT_KEPT`): the status the request was \
                 answered with when it ran.",
            ),
        )
        .required("type")
        .required("title")
        .required("status")
        .required("detail")
        .build()
        .into()
}
