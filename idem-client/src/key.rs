//! The key a send used, and what a response says about it.

use std::fmt;
use std::sync::Arc;

use http::HeaderValue;

pub use idem_protocol::header::IDEMPOTENT_REPLAYED;

/// The `Idempotency-Key` a send used, minted or the caller's own: every response the
/// middleware returns carries it as an extension ([`key_of`]), and so does a
/// [`SendError`](crate::SendError).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(Arc<str>);

impl IdempotencyKey {
    /// A fresh key: a random (version 4) UUID, which says nothing of when or where it was
    /// made.
    pub(crate) fn mint() -> Self {
        IdempotencyKey(uuid::Uuid::new_v4().to_string().into())
    }

    /// The key of the current idempotent call for `request`'s operation, when the request
    /// is sent from inside one: named by its [`Operation`](crate::Operation), else by its method
    /// and URL path, numbered within the step (or the call) that sends it. `None` outside a
    /// call.
    pub(crate) fn of_call(
        request: &reqwest::Request,
        operation: Option<&crate::Operation>,
    ) -> Option<Self> {
        let call = idem_core::context()?;
        // Numbered per method and path, not per step: a step whose requests change order
        // between attempts (one retried by the body, another not) must not hand one
        // request's key to another.
        let key = match operation {
            Some(operation) => call.downstream_key(operation.name()),
            None => {
                let path = request.url().path();
                call.next_downstream_key(&format!("{} {path}", request.method()))
            }
        };
        Some(IdempotencyKey(String::from(key).into()))
    }

    /// The key the caller set, as the server reads it ([`idem_protocol::key::parse`]): an
    /// sf-string's content, or a bare token; a value the grammar refuses as it is (lossy,
    /// trimmed), so that the caller can still quote it.
    pub(crate) fn from_header(value: &HeaderValue) -> Self {
        match idem_protocol::key::parse(value.as_bytes()) {
            Ok(key) => IdempotencyKey(key.into()),
            Err(_) => {
                let text = String::from_utf8_lossy(value.as_bytes());
                IdempotencyKey(text.trim().into())
            }
        }
    }

    /// The key, without the quotes it has in the header when sent as an sf-string. A key of
    /// yours that is not UTF-8 shows its other bytes as `U+FFFD`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// The `Idempotency-Key` the request behind `response` was sent with, when it went through
/// [`IdempotentRetry`](crate::IdempotentRetry) with a key: the key to quote when you check
/// the operation's effect, or to resend it later. Take it before reading the body: a body
/// that fails halfway (a timeout, say) is not retried, and its answer is lost.
pub fn key_of(response: &reqwest::Response) -> Option<&str> {
    response
        .extensions()
        .get::<IdempotencyKey>()
        .map(IdempotencyKey::as_str)
}

/// Whether the server answered from its record (`Idempotent-Replayed: true`): the operation
/// ran earlier, for an attempt whose answer was lost or for an earlier `send()` with this key.
pub fn was_replayed(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(IDEMPOTENT_REPLAYED)
        .is_some_and(|value| {
            value
                .as_bytes()
                .eq_ignore_ascii_case(idem_protocol::header::REPLAYED.as_bytes())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_keys_are_distinct_uuids() {
        let first = IdempotencyKey::mint();
        let second = IdempotencyKey::mint();
        assert_ne!(first, second);
        let parsed = uuid::Uuid::parse_str(first.as_str()).expect("a UUID");
        assert_eq!(parsed.get_version_num(), 4);
    }

    #[test]
    fn replayed_is_read_case_insensitively_and_only_when_true() {
        let answer = |value: &'static str| {
            reqwest::Response::from(
                http::Response::builder()
                    .header(IDEMPOTENT_REPLAYED, value)
                    .body("")
                    .unwrap(),
            )
        };
        assert!(was_replayed(&answer("true")));
        assert!(was_replayed(&answer("TRUE")));
        assert!(!was_replayed(&answer("false")));
        assert!(!was_replayed(&reqwest::Response::from(
            http::Response::new("")
        )));
    }

    #[test]
    fn a_callers_key_is_read_as_the_server_reads_it() {
        let read = |value: &'static str| {
            IdempotencyKey::from_header(&HeaderValue::from_static(value)).to_string()
        };
        assert_eq!(read("order-42"), "order-42");
        assert_eq!(read("\"order-42\""), "order-42");
        assert_eq!(read("\"a\\\"b\""), "a\"b");
        assert_eq!(read("\"order-42\";p=1"), "order-42");
        assert_eq!(
            read(" two words "),
            "two words",
            "refused by the grammar: kept"
        );
    }
}
