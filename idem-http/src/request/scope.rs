//! Whose key it is: the default scope, a digest of the `Authorization` header, and scopes
//! keyed by a secret of the server.

use http::header::AUTHORIZATION;
use http::request::Parts;
use idem_protocol::scope::{authorization_scope, ScopeKey};

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

pub use idem_protocol::scope::MIN_SCOPE_SECRET_BYTES;

/// A secret of the server that every scope is keyed with before it reaches the store
/// ([`idem_protocol::scope::keyed_scope`]).
#[derive(Clone, Debug)]
pub(crate) struct ScopeSecret(ScopeKey);

impl ScopeSecret {
    /// Panics on a secret shorter than [`MIN_SCOPE_SECRET_BYTES`]: an empty one (an unset
    /// variable read with a default, say) would protect nothing, and turn off the warning.
    pub(crate) fn new(secret: &[u8]) -> Self {
        ScopeSecret(ScopeKey::new(secret))
    }

    /// `scope` keyed by the secret: without it, no one who reads the store can test a guess
    /// of the credentials or principal behind it.
    pub(crate) fn keyed(&self, scope: &str) -> String {
        self.0.keyed(scope)
    }
}

/// The default scope: the contract's digest of the request's `Authorization`
/// ([`idem_protocol::scope::authorization_scope`]), or `None` when it has none, or only blank
/// ones. The credentials themselves never reach the store.
pub(crate) fn authorization_digest(parts: &Parts) -> Option<String> {
    authorization_scope(
        parts
            .headers
            .get_all(AUTHORIZATION)
            .iter()
            .map(|value| value.as_bytes()),
    )
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
    fn the_default_scope_is_the_contracts_digest_of_authorization() {
        let alice = authorization_digest(&parts(&["Bearer alice"])).unwrap();
        assert_eq!(
            Some(alice),
            authorization_scope([&b"bearer alice"[..]]),
            "printf 'bearer alice' | sha256sum"
        );
        assert_eq!(authorization_digest(&parts(&[])), None);
        assert_eq!(authorization_digest(&parts(&[" ", ""])), None);
    }

    #[test]
    fn a_keyed_scope_is_the_contracts() {
        assert_eq!(
            ScopeSecret::new(&[1; 32]).keyed("user:alice"),
            idem_protocol::scope::keyed_scope(&[1; 32], "user:alice")
        );
    }

    #[test]
    #[should_panic(expected = "at least 32")]
    fn a_short_secret_is_refused() {
        ScopeSecret::new(b"");
    }
}
