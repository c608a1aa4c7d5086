//! The digest of a request as it was sent, byte for byte: what a retry that sends the very
//! same request is recognised by, without reading its body as JSON.

use http::header::CONTENT_TYPE;
use http::request::Parts;
use http::{HeaderMap, HeaderName};
use idem_core::{Error, Fingerprint, Fingerprinter};
use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};

use super::fingerprint::Raw;

/// Bumped whenever the fingerprint's rule ([`of_request`](super::fingerprint::of_request))
/// reads something this digest does not, so that a digest stored before never vouches for a
/// fingerprint computed by another rule.
const DOMAIN: &str = "idem-http-raw-v1";

/// The digest of the request whose head is `parts` and whose body is `body`, the headers named
/// in `headers` listed for the fingerprint: method, path, the query as sent (its order kept),
/// each listed header's name and values in order, every `Content-Type` (which decides whether
/// the body is read as JSON) and the body, each part length-prefixed after a domain tag.
///
/// It reads everything the fingerprint reads, as sent: two requests with equal digests have
/// equal fingerprints, which is what lets a retry with the same digest as the stored request's
/// replay without computing its fingerprint. The converse does not hold (JSON keys in another
/// order), and need not: a retry with another digest is compared by its fingerprint.
pub(crate) fn raw_digest(
    parts: &Parts,
    body: &[u8],
    headers: &[HeaderName],
) -> Result<Fingerprint, Error> {
    let mut digest = Fingerprinter::new();
    digest
        .add(DOMAIN)?
        .add(parts.method.as_str())?
        .add(parts.uri.path())?
        .add(&parts.uri.query())?;
    for name in headers {
        digest.add(&Header(&parts.headers, name))?;
    }
    digest
        .add(&Header(&parts.headers, &CONTENT_TYPE))?
        .add(&Raw(body))?;
    Ok(digest.finish())
}

/// A header's name and its values in order, as sent: one sequence, the name first.
struct Header<'a>(&'a HeaderMap, &'a HeaderName);

impl Serialize for Header<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Header(headers, name) = *self;
        let mut seq = serializer.serialize_seq(None)?;
        seq.serialize_element(&Raw(name.as_str().as_bytes()))?;
        for value in headers.get_all(name) {
            seq.serialize_element(&Raw(value.as_bytes()))?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests;
