//! The contract on utoipa 5's types (feature `openapi`), with [`compat`] for where 6 changed
//! the types it uses.

use ::utoipa;

#[path = "document/contract.rs"]
mod contract;
#[path = "document/key_parameter.rs"]
mod key_parameter;
#[path = "document/problem_schema.rs"]
mod problem_schema;
#[path = "document/replayed_header.rs"]
mod replayed_header;
#[path = "document/responses.rs"]
mod responses;

/// Where utoipa 5's types differ from 6's, in the terms the shared code uses.
mod compat {
    use super::utoipa::openapi::header::{Header, HeaderBuilder};
    use super::utoipa::openapi::path::Parameter;
    use super::utoipa::openapi::schema::ObjectBuilder;
    use super::utoipa::openapi::Content;

    /// An operation's parameter, as its list holds it.
    pub(super) fn parameter(entry: &Parameter) -> Option<&Parameter> {
        Some(entry)
    }

    /// `parameter` as an operation's list holds it.
    pub(super) fn parameter_entry(parameter: Parameter) -> Parameter {
        parameter
    }

    /// `header` as a response's headers hold it.
    pub(super) fn header_entry(header: Header) -> Header {
        header
    }

    /// A response's content, as its map holds it.
    pub(super) fn content(entry: &Content) -> Option<&Content> {
        Some(entry)
    }

    /// `builder` with `schema`.
    pub(super) fn header_schema(builder: HeaderBuilder, schema: ObjectBuilder) -> HeaderBuilder {
        builder.schema(schema)
    }
}
