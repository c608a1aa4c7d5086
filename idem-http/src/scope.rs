//! Whose key it is: the default scope, a digest of the `Authorization` header, and scopes
//! keyed by a secret of the server.

use hmac::{Hmac, Mac};
use http::header::AUTHORIZATION;
use http::request::Parts;
use idem_core::Fingerprint;
use sha2::{Digest, Sha256};

/// What the layer does with a keyed request it finds no scope for: under the default scope, a
/// request without `Authorization`. Set with
/// [`unscoped`](crate::IdempotencyLayerBuilder::unscoped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unscoped {
    /// Answered 400 ([`problem::UNSCOPED`](crate::problem::UNSCOPED)); nothing runs. The
    /// default: a key without a principal would be shared with every other client without
    /// one, who could read its answer by sending it.
    #[default]
    Refused,
    /// Passed to the handler as if it carried no key: no protection against a second run,
    /// and the handler (or the authentication inside the layer) answers as it would.
    PassedThrough,
    /// Given one key space shared by every request without a scope. Only for services whose
    /// clients are all one party (calls between services of one team, say): any client
    /// that guesses another's key gets its answer.
    Shared,
}

/// A secret of the server that every scope is keyed with before it reaches the store.
#[derive(Clone)]
pub(crate) struct ScopeSecret(Hmac<Sha256>);

/// The shortest scope secret accepted, in bytes: HMAC-SHA256's output length, as RFC 2104
/// advises for its keys.
pub const MIN_SCOPE_SECRET_BYTES: usize = 32;

impl ScopeSecret {
    /// Panics on a secret shorter than [`MIN_SCOPE_SECRET_BYTES`]: an empty one (an unset
    /// variable read with a default, say) would protect nothing, and turn off the warning.
    pub(crate) fn new(secret: &[u8]) -> Self {
        assert!(
            secret.len() >= MIN_SCOPE_SECRET_BYTES,
            "the idempotency scope secret is {} bytes long; it takes at least {MIN_SCOPE_SECRET_BYTES} \
             random bytes (`openssl rand -base64 32` makes one)",
            secret.len()
        );
        ScopeSecret(Hmac::new_from_slice(secret).expect("HMAC takes a key of any length"))
    }

    /// The HMAC-SHA256 of `scope` under the secret, in hex: without the secret, no one who
    /// reads the store can test a guess of the credentials or principal behind it.
    pub(crate) fn keyed(&self, scope: &str) -> String {
        let mut mac = self.0.clone();
        mac.update(scope.as_bytes());
        Fingerprint::from_bytes(mac.finalize().into_bytes().into()).to_hex()
    }
}

impl std::fmt::Debug for ScopeSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScopeSecret(..)")
    }
}

/// The SHA-256 hex digest of every `Authorization` value, or `None` when there is none, or
/// only blank ones. The credentials themselves never reach the store.
pub(crate) fn authorization_digest(parts: &Parts) -> Option<String> {
    let mut values = parts.headers.get_all(AUTHORIZATION).iter().peekable();
    values.peek()?;
    // An empty value names no one: it would put every client that sends one in one scope.
    let blank = |value: &http::HeaderValue| value.as_bytes().trim_ascii().is_empty();
    if parts.headers.get_all(AUTHORIZATION).iter().all(blank) {
        return None;
    }
    let mut hasher = Sha256::new();
    for value in values {
        hasher.update(value.as_bytes());
        // A separator, so that two headers never digest like their concatenation.
        hasher.update([0]);
    }
    Some(Fingerprint::from_bytes(hasher.finalize().into()).to_hex())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(authorization: &[&str]) -> Parts {
        let mut request = http::Request::new(());
        for value in authorization {
            request
                .headers_mut()
                .append(AUTHORIZATION, value.parse().unwrap());
        }
        request.into_parts().0
    }

    #[test]
    fn principals_get_distinct_digests_that_hide_the_credentials() {
        let alice = authorization_digest(&parts(&["Bearer alice"])).unwrap();
        let bob = authorization_digest(&parts(&["Bearer bob"])).unwrap();
        assert_ne!(alice, bob);
        assert_eq!(alice.len(), 64);
        assert!(!alice.contains("alice"));
        assert_eq!(authorization_digest(&parts(&[])), None);
        assert_eq!(authorization_digest(&parts(&[""])), None);
        assert_eq!(authorization_digest(&parts(&[" ", ""])), None);
    }

    #[test]
    fn a_keyed_scope_depends_on_the_secret_and_is_hmac_sha256() {
        let scope = "user:alice";
        let one = ScopeSecret::new(&[1; 32]).keyed(scope);
        let two = ScopeSecret::new(&[2; 32]).keyed(scope);
        assert_ne!(one, two);
        assert_eq!(one, ScopeSecret::new(&[1; 32]).keyed(scope));
        assert_ne!(one, ScopeSecret::new(&[1; 32]).keyed("user:bob"));
        // RFC 4231, test case 6.
        assert_eq!(
            ScopeSecret::new(&[0xaa; 131])
                .keyed("Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    #[should_panic(expected = "at least 32")]
    fn a_short_secret_is_refused() {
        ScopeSecret::new(b"");
    }
}
