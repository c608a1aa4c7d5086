//! The error vocabulary of the contract: every answer other than the handler's own, one row
//! each, with its HTTP status, its RFC 9457 problem `type` URI, its title, its message, and the
//! `errorType` a Lambda function reports for it.
//!
//! | problem | status | Lambda `errorType` | what happened |
//! |---|---|---|---|
//! | [`KeyMissing`](ProblemType::KeyMissing) | 400 | `IdempotencyKeyError` | no key where one is required |
//! | [`KeyInvalid`](ProblemType::KeyInvalid) | 400 | `IdempotencyKeyError` | a malformed key, or two |
//! | [`Unscoped`](ProblemType::Unscoped) | 400 | `IdempotencyKeyError` | a key with no principal to belong to |
//! | [`BodyUnreadable`](ProblemType::BodyUnreadable) | 400 | `IdempotencyKeyError` | a body that could not be read |
//! | [`EncodingNotAccepted`](ProblemType::EncodingNotAccepted) | 406 | `IdempotencyValidationError` | a replay in a coding the retry refuses |
//! | [`InProgress`](ProblemType::InProgress) | 409 | `IdempotencyAlreadyInProgressError` | a duplicate in flight |
//! | [`ResponseNotKept`](ProblemType::ResponseNotKept) | 410 | `IdempotencyResponseNotKeptError` | handled, its answer not kept |
//! | [`BodyTooLarge`](ProblemType::BodyTooLarge) | 413 | `IdempotencyValidationError` | a body over the limit |
//! | [`KeyReused`](ProblemType::KeyReused) | 422 | `IdempotencyValidationError` | the same key, another payload |
//! | [`QuotaExceeded`](ProblemType::QuotaExceeded) | 429 | `IdempotencyQuotaExceededError` | the client's quota is used up |
//! | [`NotRecorded`](ProblemType::NotRecorded) | 500 | `IdempotencyNotRecordedError` | ran, its outcome not recorded |
//! | [`Misconfigured`](ProblemType::Misconfigured) | 500 | `IdempotencyConfigError` | idempotency is not set up right |
//! | [`ScopeMissing`](ProblemType::ScopeMissing) | 500 | `IdempotencyConfigError` | the principal's extension is missing |
//! | [`Failed`](ProblemType::Failed) | 500 | `IdempotencyPersistenceLayerError` | any other failure |
//! | [`StoreUnavailable`](ProblemType::StoreUnavailable) | 503 | `IdempotencyPersistenceLayerError` | the store can't be reached |
//! | [`StoreFull`](ProblemType::StoreFull) | 503 | `IdempotencyStoreFullError` | every client together keeps the most records allowed |
//!
//! The Lambda names are Powertools' own where Powertools has the case, so that alarms and log
//! queries written for Powertools keep working. Where it has none, the name says the case:
//! `IdempotencyNotRecordedError` rather than Powertools' catch-all persistence error, because
//! "ran, but not recorded" asks the caller to check the effect before retrying, and
//! "the store failed before anything ran" asks it to retry.

use http::StatusCode;

#[cfg(test)]
/// Where every problem type's documentation lives: its `type` URI is this, the constant's
/// name, and `.html`.
const BASE: &str = "https://docs.rs/idem-http/0.1/idem_http/problem/constant.";

macro_rules! problem_types {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal, $status:ident, $grpc:literal, $lambda:literal, $title:literal,
            $message:literal;
    )*) => {
        /// One answer of the contract other than the handler's own (see the
        /// [module](self)'s table).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ProblemType {
            $($(#[$doc])* $variant,)*
        }

        impl ProblemType {
            /// Every problem type, for clients and tests that must know them all.
            pub const ALL: &'static [ProblemType] = &[$(ProblemType::$variant),*];

            /// Its name, as idem-http's constant for its URI is named: `IN_PROGRESS`.
            pub const fn name(self) -> &'static str {
                match self { $(ProblemType::$variant => $name,)* }
            }

            /// Its `type` URI, where its documentation is.
            pub const fn uri(self) -> &'static str {
                match self {
                    $(ProblemType::$variant => concat!(
                        "https://docs.rs/idem-http/0.1/idem_http/problem/constant.",
                        $name,
                        ".html"
                    ),)*
                }
            }

            /// The HTTP status it is answered with (idem-http can answer a
            /// [`KeyReused`](ProblemType::KeyReused) with another).
            pub const fn status(self) -> StatusCode {
                match self { $(ProblemType::$variant => StatusCode::$status,)* }
            }

            /// Its title, the problem document's `title`.
            pub const fn title(self) -> &'static str {
                match self { $(ProblemType::$variant => $title,)* }
            }

            /// What happened and what to do, as a clause that follows the key it is about:
            /// "idempotency key `k` is in use by a call that has not finished; ...". Every front
            /// end (the attribute's errors, the layer's problem details, Lambda's messages)
            /// words the case with it.
            pub const fn message(self) -> &'static str {
                match self { $(ProblemType::$variant => $message,)* }
            }

            /// The gRPC status code a gRPC call is answered with for it (`grpc-status`).
            pub const fn grpc_code(self) -> u16 {
                match self { $(ProblemType::$variant => $grpc,)* }
            }

            /// The `errorType` a Lambda function reports for it.
            pub const fn lambda_error_type(self) -> &'static str {
                match self { $(ProblemType::$variant => $lambda,)* }
            }
        }
    };
}

problem_types! {
    /// A request without a key where the server requires one. Nothing ran.
    KeyMissing = "KEY_MISSING", BAD_REQUEST, 3, "IdempotencyKeyError", "Idempotency key missing",
        "is missing: this request must carry an `Idempotency-Key` header; send a new random key (a UUID) per operation";
    /// A malformed key, or two `Idempotency-Key` headers. Nothing ran.
    KeyInvalid = "KEY_INVALID", BAD_REQUEST, 3, "IdempotencyKeyError", "Invalid idempotency key",
        "cannot be used";
    /// A request body over the server's limit. Nothing ran.
    BodyTooLarge = "BODY_TOO_LARGE", PAYLOAD_TOO_LARGE, 8, "IdempotencyValidationError", "Request body too large",
        "came with a body over the size the server fingerprints; nothing ran";
    /// A request body that could not be read. Nothing ran.
    BodyUnreadable = "BODY_UNREADABLE", BAD_REQUEST, 3, "IdempotencyKeyError", "Request body unreadable",
        "came with a body that could not be read; nothing ran";
    /// A duplicate of a call still running. Retry after `Retry-After`.
    InProgress = "IN_PROGRESS", CONFLICT, 10, "IdempotencyAlreadyInProgressError", "Request in progress",
        "is in use by a call that has not finished; retry once it has";
    /// The key was used before with another payload. Never retried.
    KeyReused = "KEY_REUSED", UNPROCESSABLE_ENTITY, 9, "IdempotencyValidationError", "Idempotency key reused",
        "was already used with a different request; send a new key for a new request";
    /// The client's records are over its quota. Nothing ran; retry after `Retry-After`.
    QuotaExceeded = "QUOTA_EXCEEDED", TOO_MANY_REQUESTS, 8, "IdempotencyQuotaExceededError", "Idempotency quota exceeded",
        "was not taken: its client keeps the most records it may; nothing ran, retry after the time given";
    /// Every client together keeps the most records the server allows (its quota's total
    /// bound). Nothing ran; retry after `Retry-After`.
    StoreFull = "STORE_FULL", SERVICE_UNAVAILABLE, 14, "IdempotencyStoreFullError", "Idempotency store full",
        "was not taken: the server keeps the most idempotency records it allows for all its clients together; nothing ran, retry after the time given";
    /// The store could not be reached. Nothing ran; retry later.
    StoreUnavailable = "STORE_UNAVAILABLE", SERVICE_UNAVAILABLE, 14, "IdempotencyPersistenceLayerError", "Idempotency store unavailable",
        "could not be checked: the idempotency store is unavailable; nothing ran, retry later";
    /// The call ran (or may have) but its outcome was not recorded. Check its effect before
    /// retrying.
    NotRecorded = "NOT_RECORDED", INTERNAL_SERVER_ERROR, 2, "IdempotencyNotRecordedError", "Response not recorded",
        "belongs to a call that ran, or may have, but whose outcome was not recorded; check its effect before retrying";
    /// The call was handled but its answer was not kept (too large, failed while sent). It
    /// will not run again.
    ResponseNotKept = "RESPONSE_NOT_KEPT", GONE, 6, "IdempotencyResponseNotKeptError", "Response not kept",
        "belongs to a call that was handled but whose answer was not kept; it will not run again";
    /// A replay whose stored body is in a content coding the retry does not accept.
    EncodingNotAccepted = "ENCODING_NOT_ACCEPTED", NOT_ACCEPTABLE, 9, "IdempotencyValidationError", "Stored encoding not accepted",
        "has an answer in a content coding this retry does not accept; accept it to get the answer";
    /// The request lacks the extension the scope is taken from: the authentication layer must
    /// run before idempotency's. Nothing ran.
    ScopeMissing = "SCOPE_MISSING", INTERNAL_SERVER_ERROR, 13, "IdempotencyConfigError", "Idempotency scope missing",
        "could not be scoped: the principal it belongs to was not set by the authentication that must run first; nothing ran";
    /// A keyed request with no principal to scope its key to. Nothing ran.
    Unscoped = "UNSCOPED", BAD_REQUEST, 16, "IdempotencyKeyError", "Idempotency key without a principal",
        "cannot be used without credentials: send the `Authorization` the server expects with it, so that the key is yours alone; nothing ran";
    /// Idempotency is not set up right: no handle installed, two functions under one name, a
    /// handler without a name. Nothing ran.
    Misconfigured = "MISCONFIGURED", INTERNAL_SERVER_ERROR, 13, "IdempotencyConfigError", "Idempotency misconfigured",
        "could not be processed: idempotency is not set up right on the server; nothing ran";
    /// Any other failure of the idempotency machinery.
    Failed = "FAILED", INTERNAL_SERVER_ERROR, 13, "IdempotencyPersistenceLayerError", "Idempotency failure",
        "could not be processed: the idempotency machinery failed";
}

impl ProblemType {
    /// The problem type a `type` URI names, in any version of its documentation's address
    /// (`.../idem-http/0.1/...`, `.../idem-http/latest/...`); `None` for another's.
    ///
    /// ```
    /// use idem_protocol::problem::ProblemType;
    /// let uri = "https://docs.rs/idem-http/latest/idem_http/problem/constant.IN_PROGRESS.html";
    /// assert_eq!(ProblemType::from_uri(uri), Some(ProblemType::InProgress));
    /// assert_eq!(ProblemType::from_uri("about:blank"), None);
    /// ```
    pub fn from_uri(uri: &str) -> Option<Self> {
        let name = uri
            .strip_prefix("https://docs.rs/idem-http/")?
            .split_once('/')?
            .1
            .strip_prefix("idem_http/problem/constant.")?
            .strip_suffix(".html")?;
        Self::ALL.iter().copied().find(|kind| kind.name() == name)
    }

    /// Whether the call may have taken effect: a client must not resend it blindly.
    pub const fn may_have_taken_effect(self) -> bool {
        matches!(
            self,
            ProblemType::NotRecorded | ProblemType::ResponseNotKept
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_reads_back_from_its_uri_and_is_documented_under_one_base() {
        for &kind in ProblemType::ALL {
            assert!(kind.uri().starts_with(BASE), "{kind:?}");
            assert_eq!(ProblemType::from_uri(kind.uri()), Some(kind));
            let latest = kind.uri().replace("/0.1/", "/latest/");
            assert_eq!(ProblemType::from_uri(&latest), Some(kind));
            assert!(kind.lambda_error_type().starts_with("Idempotency"));
            assert!(!kind.message().is_empty() && !kind.title().is_empty());
        }
    }

    #[test]
    fn names_are_distinct_and_other_uris_are_none() {
        for (i, kind) in ProblemType::ALL.iter().enumerate() {
            assert!(!ProblemType::ALL[..i]
                .iter()
                .any(|k| k.name() == kind.name()));
        }
        for other in [
            "about:blank",
            "https://docs.rs/idem-http/0.1/idem_http/problem/constant.NOPE.html",
            "https://example.com/IN_PROGRESS",
            "https://docs.rs/idem-http/0.1/idem_http/problem/constant.IN_PROGRESS",
        ] {
            assert_eq!(ProblemType::from_uri(other), None, "{other}");
        }
    }

    #[test]
    fn the_statuses_are_the_contracts() {
        assert_eq!(ProblemType::InProgress.status(), 409);
        assert_eq!(ProblemType::KeyReused.status(), 422);
        assert_eq!(ProblemType::ResponseNotKept.status(), 410);
        assert_eq!(ProblemType::QuotaExceeded.status(), 429);
        assert_eq!(ProblemType::StoreUnavailable.status(), 503);
        assert_eq!(ProblemType::Unscoped.status(), 400);
        assert!(ProblemType::NotRecorded.may_have_taken_effect());
        assert!(!ProblemType::InProgress.may_have_taken_effect());
    }
}
