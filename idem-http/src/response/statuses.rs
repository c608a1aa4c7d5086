//! Which response statuses are stored by default, the answers that leave no result (those
//! refused by validation or authentication), and how long a 409 says to wait by default.

use std::time::Duration;

use http::StatusCode;

/// The `Retry-After` of a 409 for a request still in progress, unless set otherwise: 1 second,
/// or what is left of the running request's lease when that is shorter.
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// Whether a response with `status` is stored by default: 200 to 499, except
///
/// - the statuses that say "try again" (408, 409, 425, 429, and 499, "client closed
///   request"), which a retry must be able to get past, and
/// - the [validation answers](is_validation_answer) (400, 415, 422): a request refused by
///   validation leaves no result, and the client may correct it and resend it with the same key,
/// - the [authentication answers](is_authentication_answer) (401, 403, 407): nothing is kept
///   for a principal that was not authenticated, so that a flood of made-up credentials
///   cannot fill the store or a scope's quota, and a client whose credentials were refused
///   can resend with the same key once they are right.
///
/// To store validation answers too:
///
/// ```
/// # fn demo(idem: idem_core::Idempotency) {
/// use idem_http::{is_validation_answer, stored_by_default, IdempotencyLayer};
///
/// let layer = IdempotencyLayer::builder(idem)
///     .store_when(|status| stored_by_default(status) || is_validation_answer(status))
///     .build();
/// # let _ = layer; }
/// ```
pub fn stored_by_default(status: StatusCode) -> bool {
    matches!(status.as_u16(), 200..=499)
        && !matches!(status.as_u16(), 408 | 409 | 425 | 429 | 499)
        && !is_validation_answer(status)
        && !is_authentication_answer(status)
}

/// Whether `status` says the request's credentials were not accepted: 401 Unauthorized, 403
/// Forbidden or 407 Proxy Authentication Required. The handler (or the authentication in
/// front of it) judged who is asking, not what was asked, so nothing it did is the request's
/// result.
pub fn is_authentication_answer(status: StatusCode) -> bool {
    matches!(status.as_u16(), 401 | 403 | 407)
}

/// Whether `status` is what a request refused by validation gets: 400 Bad Request, 415
/// Unsupported Media Type or 422 Unprocessable Content (what axum's `Json` extractor answers to
/// a body it cannot read).
pub fn is_validation_answer(status: StatusCode) -> bool {
    matches!(status.as_u16(), 400 | 415 | 422)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_and_client_errors_are_stored_but_try_again_answers_are_not() {
        for stored in [200, 201, 204, 302, 404, 410] {
            assert!(
                stored_by_default(StatusCode::from_u16(stored).unwrap()),
                "{stored}"
            );
        }
        for released in [
            100, 400, 401, 403, 407, 408, 409, 415, 422, 425, 429, 499, 500, 502, 503,
        ] {
            assert!(
                !stored_by_default(StatusCode::from_u16(released).unwrap()),
                "{released}"
            );
        }
    }
}
