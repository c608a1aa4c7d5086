//! Whose key it is: the scope a request's `Authorization` puts its keys in, and a scope keyed
//! by a server's secret.
//!
//! # The `Authorization` scope, exactly
//!
//! The credential is taken as the server will judge it, with what RFC 9110 makes equal made
//! equal: surrounding spaces and tabs are removed, the auth scheme (the word before the first
//! space) is lower-cased, and the spaces between it and the credentials become one. The
//! credentials keep their case, and so does a value without a space (a bare API key), which
//! has no scheme to lower-case. The scope is the lower-case hex SHA-256 of that text. So
//! `Bearer abc`, `bearer abc` and ` BEARER   abc ` are one scope, which a shell reproduces:
//!
//! ```console
//! $ printf '%s' 'bearer abc' | sha256sum
//! ```
//!
//! A request without `Authorization`, or with only blank values, has no scope. One with
//! several (which RFC 9110 does not allow) is scoped by their normalised values joined with
//! a line feed, which no header value holds: `printf 'basic x\nbearer y' | sha256sum`.
//!
//! # A keyed scope
//!
//! With a server secret, the stored scope is the lower-case hex HMAC-SHA256 of the scope above
//! (or of the principal a scope function gave) under the secret, so that no one who reads the
//! store can test a guess of the credentials behind it: [`keyed_scope`].

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The shortest secret [`keyed_scope`] takes, in bytes: HMAC-SHA256's output length, as
/// RFC 2104 advises for its keys.
pub const MIN_SCOPE_SECRET_BYTES: usize = 32;

/// The scope of a request whose `Authorization` values are `values` (see the
/// [module](self)), or `None` when it has none but blank ones.
///
/// ```
/// use idem_protocol::scope::authorization_scope;
/// let scope = authorization_scope([&b"Bearer abc"[..]]).unwrap();
/// assert_eq!(scope, authorization_scope([&b" bearer   abc"[..]]).unwrap());
/// // printf '%s' 'bearer abc' | sha256sum
/// assert_eq!(scope, "46e38e9ce4c432c3ca84636e27ba624263cfe0e4ad78886dcbad9942a0f3f36a");
/// assert_eq!(authorization_scope([&b"  "[..]]), None);
/// ```
pub fn authorization_scope<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Option<String> {
    let mut hasher = Sha256::new();
    let mut any = false;
    for value in values {
        let Some(credential) = normalised(value) else {
            continue;
        };
        if any {
            hasher.update(b"\n");
        }
        any = true;
        for part in credential {
            hasher.update(part);
        }
    }
    any.then(|| hex(&hasher.finalize()))
}

/// The scope a scope function's answer gives a key: `None` for `None`, and for an empty or
/// blank principal too, which would otherwise be one scope shared by every request that gave
/// it (a missing `x-tenant-id` header read as `""`, say). Every front end asks this before
/// it keys, refuses or shares a request's key.
///
/// ```
/// use idem_protocol::scope::effective;
/// assert_eq!(effective(Some("tenant-7")), Some("tenant-7"));
/// assert_eq!(effective(Some("")), None);
/// assert_eq!(effective(Some(" \t")), None);
/// assert_eq!(effective(None), None);
/// ```
pub fn effective(scope: Option<&str>) -> Option<&str> {
    scope.filter(|scope| !scope.trim().is_empty())
}

/// `scope` keyed by `secret`: the lower-case hex HMAC-SHA256 of `scope` under it.
///
/// # Panics
///
/// On a secret shorter than [`MIN_SCOPE_SECRET_BYTES`]: an empty one (an unset variable read
/// with a default, say) would protect nothing.
///
/// ```
/// // RFC 4231, test case 6.
/// let keyed = idem_protocol::scope::keyed_scope(
///     &[0xaa; 131],
///     "Test Using Larger Than Block-Size Key - Hash Key First",
/// );
/// assert_eq!(keyed, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
/// ```
pub fn keyed_scope(secret: &[u8], scope: &str) -> String {
    ScopeKey::new(secret).keyed(scope)
}

/// A secret that scopes are keyed with, checked once: [`keyed_scope`] for many scopes.
#[derive(Clone)]
pub struct ScopeKey(Hmac<Sha256>);

impl ScopeKey {
    /// The key for `secret`.
    ///
    /// # Panics
    ///
    /// On a secret shorter than [`MIN_SCOPE_SECRET_BYTES`].
    pub fn new(secret: &[u8]) -> Self {
        assert!(
            secret.len() >= MIN_SCOPE_SECRET_BYTES,
            "the idempotency scope secret is {} bytes long; it takes at least \
             {MIN_SCOPE_SECRET_BYTES} random bytes (`openssl rand -base64 32` makes one)",
            secret.len()
        );
        ScopeKey(Hmac::new_from_slice(secret).expect("HMAC takes a key of any length"))
    }

    /// `scope` keyed: the lower-case hex HMAC-SHA256 of it under the secret.
    pub fn keyed(&self, scope: &str) -> String {
        let mut mac = self.0.clone();
        mac.update(scope.as_bytes());
        hex(&mac.finalize().into_bytes())
    }
}

impl std::fmt::Debug for ScopeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScopeKey(..)")
    }
}

/// The credential in `value` as RFC 9110 compares it, in pieces to digest in order: the auth
/// scheme lower-cased, then one space and the credentials. A value with no space after a
/// first word has no scheme to tell apart (a bare API key, say) and is kept as it is, since
/// its case may be all that tells two keys apart.
fn normalised(value: &[u8]) -> Option<[Vec<u8>; 2]> {
    let value = trim(value);
    if value.is_empty() {
        return None;
    }
    let Some(scheme_end) = value.iter().position(|&b| b == b' ') else {
        return Some([value.to_vec(), Vec::new()]);
    };
    let scheme = value[..scheme_end].to_ascii_lowercase();
    let rest = &value[scheme_end..];
    let credentials_start = rest.iter().position(|&b| b != b' ').unwrap_or(rest.len());
    let mut credentials = Vec::with_capacity(rest.len() + 1);
    credentials.push(b' ');
    credentials.extend_from_slice(&rest[credentials_start..]);
    Some([scheme, credentials])
}

fn trim(value: &[u8]) -> &[u8] {
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !blank(b)).unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !blank(b))
        .map_or(start, |end| end + 1);
    &value[start..end]
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(bytes.len() * 2);
    for &byte in bytes {
        hex.push(DIGITS[usize::from(byte >> 4)] as char);
        hex.push(DIGITS[usize::from(byte & 0xf)] as char);
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_key_debugs_without_its_secret() {
        assert_eq!(format!("{:?}", ScopeKey::new(&[7; 32])), "ScopeKey(..)");
    }

    fn scope(values: &[&str]) -> Option<String> {
        authorization_scope(values.iter().map(|value| value.as_bytes()))
    }

    fn sha256_hex(text: &str) -> String {
        hex(&Sha256::digest(text.as_bytes()))
    }

    #[test]
    fn one_value_is_the_sha256_of_its_normal_form() {
        assert_eq!(scope(&["bearer abc"]).unwrap(), sha256_hex("bearer abc"));
        for spelling in ["Bearer abc", "BEARER abc", " bearer   abc\t", "bEaReR abc"] {
            assert_eq!(scope(&[spelling]), scope(&["bearer abc"]), "{spelling:?}");
        }
        // The credentials themselves keep their case: a token is case-sensitive.
        assert_ne!(scope(&["Bearer ABC"]), scope(&["Bearer abc"]));
        // A value without a space is a bare credential: its case is kept.
        assert_eq!(scope(&["sk_live_AbC"]).unwrap(), sha256_hex("sk_live_AbC"));
        assert_ne!(scope(&["sk_live_AbC"]), scope(&["sk_live_aBc"]));
        // Only a space separates the scheme (RFC 9110's 1*SP); a tab does not.
        assert_eq!(scope(&["Bearer\tX"]).unwrap(), sha256_hex("Bearer\tX"));
    }

    #[test]
    fn principals_get_distinct_scopes_that_hide_the_credentials() {
        let alice = scope(&["Bearer alice"]).unwrap();
        assert_ne!(alice, scope(&["Bearer bob"]).unwrap());
        assert_eq!(alice.len(), 64);
        assert!(!alice.contains("alice"));
    }

    #[test]
    fn blank_values_name_no_one() {
        assert_eq!(scope(&[]), None);
        assert_eq!(scope(&[""]), None);
        assert_eq!(scope(&[" ", "\t"]), None);
        assert_eq!(scope(&["", "Bearer x"]), scope(&["Bearer x"]));
    }

    #[test]
    fn several_values_are_joined_by_line_feeds() {
        assert_eq!(
            scope(&["Basic x", "Bearer y"]).unwrap(),
            sha256_hex("basic x\nbearer y")
        );
        assert_ne!(
            scope(&["Basic x", "Bearer y"]),
            scope(&["Bearer y", "Basic x"])
        );
    }

    #[test]
    fn a_keyed_scope_depends_on_the_secret() {
        let one = keyed_scope(&[1; 32], "user:alice");
        assert_ne!(one, keyed_scope(&[2; 32], "user:alice"));
        assert_eq!(one, ScopeKey::new(&[1; 32]).keyed("user:alice"));
        assert_ne!(one, keyed_scope(&[1; 32], "user:bob"));
    }

    #[test]
    #[should_panic(expected = "at least 32")]
    fn a_short_secret_is_refused() {
        keyed_scope(b"", "x");
    }
}
