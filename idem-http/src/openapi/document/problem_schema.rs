//! The component schema of the layer's problem documents.

use super::utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaFormat, Type};

use crate::openapi::PROBLEM_SCHEMA;
use crate::response::problem::ProblemType;

/// The schema of the layer's answers: an RFC 9457 problem document, served as
/// `application/problem+json` (see [`crate::openapi::problem_schema`]).
pub(crate) fn problem_schema() -> Schema {
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
