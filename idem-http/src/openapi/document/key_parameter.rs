//! The `Idempotency-Key` request header, as an operation's parameter.

use super::utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use super::utoipa::openapi::schema::{ObjectBuilder, Type};
use super::utoipa::openapi::Required;

use crate::openapi::header_case::title_case;
use crate::request::key_header::{IDEMPOTENCY_KEY, MAX_HEADER_KEY_LEN};

/// Whether `parameter` is the `Idempotency-Key` header (whatever its case).
pub(crate) fn is_key_parameter(parameter: &Parameter) -> bool {
    parameter.parameter_in == ParameterIn::Header
        && parameter
            .name
            .eq_ignore_ascii_case(IDEMPOTENCY_KEY.as_str())
}

/// The `Idempotency-Key` header parameter: required when the layer
/// [requires a key](crate::IdempotencyLayerBuilder::require_key).
pub(crate) fn key_parameter(required: bool) -> Parameter {
    let schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(MAX_HEADER_KEY_LEN))
        .pattern(Some(idem_protocol::key::bare_pattern()));
    let when_absent = if required {
        "A request without one is refused with a 400."
    } else {
        "A request without one runs as if there were no idempotency layer."
    };
    ParameterBuilder::new()
        .name(title_case(&IDEMPOTENCY_KEY))
        .parameter_in(ParameterIn::Header)
        .required(if required {
            Required::True
        } else {
            Required::False
        })
        .description(Some(format!(
            "Makes this request idempotent: a retry with the same key gets the first \
             request's response again (with `{replayed}: true`) instead of running it twice. \
             Send a new random key (a UUID v4) for each operation, and the same key for each \
             retry of it. A key is 1 to {max} visible ASCII characters, sent bare, as this \
             schema describes, or as an RFC 8941 string (`\"key\"`, the IETF draft's form). \
             {when_absent}",
            replayed = title_case(&crate::response::stored::IDEMPOTENT_REPLAYED),
            max = MAX_HEADER_KEY_LEN,
        )))
        .schema(Some(schema))
        .build()
}
