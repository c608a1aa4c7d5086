//! The digest of a request as it was sent, byte for byte: what a retry that sends the very
//! same request is recognised by, without reading its body as JSON.

use http::header::CONTENT_TYPE;
use http::request::Parts;
use http::{HeaderMap, HeaderName};
use idem_core::Fingerprint;
use sha2::{Digest, Sha256};

/// Bumped whenever the fingerprint's rule ([`of_request`](super::fingerprint::of_request))
/// reads something this digest does not, so that a digest stored before never vouches for a
/// fingerprint computed by another rule.
const DOMAIN: &str = "idem-http-raw-v1";

/// The digest of the request whose head is `parts` and whose body is `body`, the headers named
/// in `headers` listed for the fingerprint: method, path, the query as sent (its order kept,
/// and whether there is one at all), each listed header's name and values in order, every
/// `Content-Type` (which decides whether the body is read as JSON) and the body, each part
/// length-prefixed after a domain tag, hashed as it is read.
///
/// It reads everything the fingerprint reads, as sent: two requests with equal digests have
/// equal fingerprints, which is what lets a retry with the same digest as the stored request's
/// replay without computing its fingerprint. The converse does not hold (JSON keys in another
/// order), and need not: a retry with another digest is compared by its fingerprint.
pub(crate) fn raw_digest(parts: &Parts, body: &[u8], headers: &[HeaderName]) -> Fingerprint {
    let mut digest = Sha256::new();
    part(&mut digest, DOMAIN.as_bytes());
    part(&mut digest, parts.method.as_str().as_bytes());
    part(&mut digest, parts.uri.path().as_bytes());
    match parts.uri.query() {
        Some(query) => {
            digest.update([1]);
            part(&mut digest, query.as_bytes());
        }
        None => digest.update([0]),
    }
    // The listed headers, then `Content-Type`: a count first, so that no list of names and
    // values reads as another.
    count(&mut digest, headers.len() + 1);
    for name in headers.iter().chain([&CONTENT_TYPE]) {
        header(&mut digest, &parts.headers, name);
    }
    part(&mut digest, body);
    Fingerprint::from_bytes(digest.finalize().into())
}

/// `name` and its values in order, as sent: the name, the count of values, each value.
fn header(digest: &mut Sha256, headers: &HeaderMap, name: &HeaderName) {
    part(digest, name.as_str().as_bytes());
    let values = headers.get_all(name);
    count(digest, values.iter().count());
    for value in values {
        part(digest, value.as_bytes());
    }
}

/// `bytes`, its length before it.
fn part(digest: &mut Sha256, bytes: &[u8]) {
    count(digest, bytes.len());
    digest.update(bytes);
}

fn count(digest: &mut Sha256, n: usize) {
    digest.update((n as u64).to_le_bytes());
}

#[cfg(test)]
mod tests;
