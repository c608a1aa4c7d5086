//! The `Idempotent-Replayed` response header, on the responses a retry can get again.

use super::utoipa::openapi::header::{Header, HeaderBuilder};
use super::utoipa::openapi::schema::{ObjectBuilder, Type};
use super::utoipa::openapi::{RefOr, Responses};
use http::StatusCode;

use super::compat;
use super::responses::is_problem_response;
use crate::openapi::header_case::title_case;
use crate::request::key_header::IDEMPOTENCY_KEY;
use crate::response::stored::IDEMPOTENT_REPLAYED;

/// Adds `Idempotent-Replayed` to each of `responses` whose status the layer stores (`stored`
/// says which), and so can replay: a status (`201`), or a range (`2XX`) of which it stores
/// some. A response that names the header already, the layer's own answers (which carry it
/// where the layer sends it), a reference, and `default` are left as they are.
pub(crate) fn mark_replayable(responses: &mut Responses, stored: &dyn Fn(StatusCode) -> bool) {
    let name = title_case(&IDEMPOTENT_REPLAYED);
    for (code, response) in &mut responses.responses {
        let RefOr::T(response) = response else {
            continue;
        };
        let named = response
            .headers
            .keys()
            .any(|header| header.eq_ignore_ascii_case(&name));
        if !named && !is_problem_response(response) && replayable(code, stored) {
            response
                .headers
                .insert(name.clone(), compat::header_entry(replayed_header()));
        }
    }
}

/// Whether a response documented under `code` can be a replay.
fn replayable(code: &str, stored: &dyn Fn(StatusCode) -> bool) -> bool {
    if let Ok(status) = StatusCode::from_bytes(code.as_bytes()) {
        return stored(status);
    }
    match code.as_bytes() {
        [class @ b'1'..=b'5', b'X' | b'x', b'X' | b'x'] => {
            let first = u16::from(class - b'0') * 100;
            (first..first + 100)
                .filter_map(|status| StatusCode::from_u16(status).ok())
                .any(stored)
        }
        _ => false,
    }
}

/// The `Idempotent-Replayed` header.
pub(crate) fn replayed_header() -> Header {
    let schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some([idem_protocol::header::REPLAYED]));
    compat::header_schema(HeaderBuilder::new(), schema)
        .description(Some(format!(
            "`true` when this response is a replay: the stored response of an earlier request \
             with the same `{}`, which did not run again. Absent on the response of the \
             request that ran.",
            title_case(&IDEMPOTENCY_KEY)
        )))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::statuses::stored_by_default;

    #[test]
    fn statuses_and_ranges_are_replayable_when_the_layer_stores_them() {
        assert!(replayable("201", &stored_by_default));
        assert!(!replayable("409", &stored_by_default));
        assert!(replayable("2XX", &stored_by_default));
        assert!(!replayable("5XX", &stored_by_default));
        assert!(!replayable("default", &stored_by_default));
    }
}
