//! Whose key it is: the default scope, a digest of the `Authorization` header.

use http::header::AUTHORIZATION;
use http::request::Parts;
use idem_core::Fingerprint;
use sha2::{Digest, Sha256};

/// The SHA-256 hex digest of every `Authorization` value, or `None` when there is none. The
/// credentials themselves never reach the store.
pub(crate) fn authorization_digest(parts: &Parts) -> Option<String> {
    let mut values = parts.headers.get_all(AUTHORIZATION).iter().peekable();
    values.peek()?;
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
    }
}
