//! The contract on utoipa 6's types (feature `openapi-utoipa6`): the same code as utoipa 5's,
//! with [`compat`] for where 6 changed the types it uses.

use ::utoipa6 as utoipa;

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

/// Where utoipa 6's types differ from 5's, in the terms the shared code uses: parameters,
/// headers and contents may be references, and a header's schema is optional.
mod compat {
    use super::utoipa::openapi::header::{Header, HeaderBuilder};
    use super::utoipa::openapi::path::Parameter;
    use super::utoipa::openapi::schema::ObjectBuilder;
    use super::utoipa::openapi::{Content, RefOr};

    /// An operation's parameter, as its list holds it: `None` for a reference.
    pub(super) fn parameter(entry: &RefOr<Parameter>) -> Option<&Parameter> {
        match entry {
            RefOr::T(parameter) => Some(parameter),
            RefOr::Ref(_) => None,
        }
    }

    /// `parameter` as an operation's list holds it.
    pub(super) fn parameter_entry(parameter: Parameter) -> RefOr<Parameter> {
        RefOr::T(parameter)
    }

    /// `header` as a response's headers hold it.
    pub(super) fn header_entry(header: Header) -> RefOr<Header> {
        RefOr::T(header)
    }

    /// A response's content, as its map holds it: `None` for a reference.
    pub(super) fn content(entry: &RefOr<Content>) -> Option<&Content> {
        match entry {
            RefOr::T(content) => Some(content),
            RefOr::Ref(_) => None,
        }
    }

    /// `builder` with `schema`.
    pub(super) fn header_schema(builder: HeaderBuilder, schema: ObjectBuilder) -> HeaderBuilder {
        builder.schema(Some(schema))
    }
}
