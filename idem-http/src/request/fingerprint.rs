//! The request's fingerprint: method, path, canonical query, listed headers and body; and
//! what of a request it reads, kept for a fingerprint computed only when a retry needs it.

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::request::Parts;
use http::{HeaderMap, HeaderName, Method, Uri};
use idem_core::json::CanonicalJson;
use idem_core::{Error, Fingerprint, Fingerprinter};
use serde::{Serialize, Serializer};

/// Fingerprints a buffered request, so that a retry matches only when it asks for the same
/// thing. `headers` holds the headers named in `names` and `Content-Type` (others are not
/// read). Everything read here is read as sent by [`raw_digest`](super::raw_digest::raw_digest)
/// too, whose domain tag changes whenever this rule reads more.
pub(crate) fn of_request(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
    names: &[HeaderName],
) -> Result<Fingerprint, Error> {
    let mut fp = Fingerprinter::new();
    fp.add(method.as_str())?;
    fp.add(uri.path())?;
    fp.add(&sorted_query(uri.query().unwrap_or("")))?;
    for name in names {
        let values: Vec<Raw<'_>> = headers
            .get_all(name)
            .iter()
            .map(|value| Raw(value.as_bytes()))
            .collect();
        fp.add(&(name.as_str(), values))?;
    }
    match json_body(headers, body) {
        Some(value) => fp.add(&BodyPrint::Json(value))?,
        None => fp.add(&BodyPrint::Bytes(Raw(body)))?,
    };
    Ok(fp.finish())
}

/// What of a request its fingerprint reads, held for a fingerprint computed later: the body
/// shared, not copied, and of the headers only those the fingerprint reads.
pub(crate) struct Fingerprinted {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
}

impl Fingerprinted {
    /// What the fingerprint of the request with head `parts` and body `body` reads, the
    /// headers named in `names` listed for it.
    pub(crate) fn of(parts: &Parts, body: Bytes, names: &[HeaderName]) -> Self {
        let mut headers = HeaderMap::new();
        for name in names.iter().chain([&CONTENT_TYPE]) {
            // Copied once however often it is listed: the fingerprint reads each listing of a
            // name from the request's values, as it would from the request itself.
            if headers.contains_key(name) {
                continue;
            }
            for value in parts.headers.get_all(name) {
                headers.append(name.clone(), value.clone());
            }
        }
        Fingerprinted {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            headers,
            body,
        }
    }

    /// The request's fingerprint, the headers named in `names` listed for it (as when it was
    /// held).
    pub(crate) fn fingerprint(&self, names: &[HeaderName]) -> Result<Fingerprint, Error> {
        of_request(&self.method, &self.uri, &self.headers, &self.body, names)
    }
}

/// The query's `name=value` pairs sorted by name, so that `?a=1&b=2` and `?b=2&a=1` match.
/// Pairs of one name keep their order: applications read `?to=alice&to=mallory` as a list,
/// and a list in another order is another request. Names are compared as the application
/// reads them, decoded, so that `amount` and `amoun%74` are one name.
fn sorted_query(query: &str) -> Vec<&str> {
    let mut pairs: Vec<(Vec<u8>, &str)> = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| (decoded_name(pair), pair))
        .collect();
    pairs.sort_by(|(a, _), (b, _)| a.cmp(b));
    pairs.into_iter().map(|(_, pair)| pair).collect()
}

/// The name of a `name=value` pair, `+` and `%XX` decoded as forms are; a `%` not followed by
/// two hexadecimal digits is kept as it is.
fn decoded_name(pair: &str) -> Vec<u8> {
    let name = pair
        .split_once('=')
        .map_or(pair, |(name, _)| name)
        .as_bytes();
    let mut decoded = Vec::with_capacity(name.len());
    let mut rest = name;
    while let Some((&byte, tail)) = rest.split_first() {
        let hex = |at: usize| tail.get(at).and_then(|b| (*b as char).to_digit(16));
        rest = match (byte, hex(0), hex(1)) {
            (b'%', Some(high), Some(low)) => {
                decoded.push((high * 16 + low) as u8);
                &tail[2..]
            }
            (b'+', _, _) => {
                decoded.push(b' ');
                tail
            }
            _ => {
                decoded.push(byte);
                tail
            }
        };
    }
    decoded
}

/// The body read as JSON when it says it is, so that key order, whitespace and the spelling
/// of a number don't matter, but its value does: [`idem_core::json`]'s rule. A body that is
/// not JSON by that rule (a key given twice, nesting too deep) is fingerprinted by its bytes.
fn json_body(headers: &HeaderMap, body: &[u8]) -> Option<CanonicalJson> {
    let content_type = headers.get(CONTENT_TYPE)?.to_str().ok()?;
    let essence = content_type.split(';').next()?.trim().to_ascii_lowercase();
    let is_json = essence == "application/json" || essence.ends_with("+json");
    if !is_json {
        return None;
    }
    #[cfg(test)]
    parses::count();
    CanonicalJson::parse(body)
}

#[derive(Serialize)]
enum BodyPrint<'a> {
    Json(CanonicalJson),
    Bytes(Raw<'a>),
}

/// Bytes fingerprinted as one byte string rather than a sequence of numbers.
pub(super) struct Raw<'a>(pub(super) &'a [u8]);

impl Serialize for Raw<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.0)
    }
}

/// How many bodies this thread read as JSON, for the tests that a replay of the same bytes
/// reads none.
#[cfg(test)]
pub(crate) mod parses {
    use std::cell::Cell;

    thread_local! {
        static PARSES: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn count() {
        PARSES.with(|parses| parses.set(parses.get() + 1));
    }

    /// The bodies read as JSON on this thread so far.
    pub(crate) fn so_far() -> usize {
        PARSES.with(Cell::get)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(method: &str, uri: &str, content_type: Option<&str>, body: &str) -> Fingerprint {
        let mut builder = http::Request::builder().method(method).uri(uri);
        if let Some(content_type) = content_type {
            builder = builder.header(CONTENT_TYPE, content_type);
        }
        let parts = builder.body(()).unwrap().into_parts().0;
        of_request(
            &parts.method,
            &parts.uri,
            &parts.headers,
            body.as_bytes(),
            &[],
        )
        .unwrap()
    }

    #[test]
    fn json_bodies_match_by_value() {
        let json = Some("application/json; charset=utf-8");
        assert_eq!(
            print("POST", "/p", json, r#"{"a":1,"b":[1,2]}"#),
            print("POST", "/p", json, r#"{ "b": [1, 2], "a": 1 }"#),
        );
        assert_ne!(
            print("POST", "/p", json, r#"{"a":1}"#),
            print("POST", "/p", json, r#"{"a":2}"#),
        );
    }

    #[test]
    fn other_bodies_match_by_bytes() {
        let text = Some("text/plain");
        assert_ne!(
            print("POST", "/p", text, r#"{"a":1,"b":2}"#),
            print("POST", "/p", text, r#"{"b":2,"a":1}"#),
        );
    }

    #[test]
    fn method_path_and_query_count_but_query_order_does_not() {
        let base = print("POST", "/p?a=1&b=2", None, "x");
        assert_eq!(base, print("POST", "/p?b=2&a=1", None, "x"));
        assert_ne!(base, print("PATCH", "/p?a=1&b=2", None, "x"));
        assert_ne!(base, print("POST", "/q?a=1&b=2", None, "x"));
        assert_ne!(base, print("POST", "/p?a=1&b=3", None, "x"));
    }

    #[test]
    fn values_of_one_name_keep_their_order() {
        let base = print("POST", "/p?to=alice&cc=bob&to=mallory", None, "x");
        assert_eq!(
            base,
            print("POST", "/p?to=alice&to=mallory&cc=bob", None, "x")
        );
        assert_eq!(
            base,
            print("POST", "/p?cc=bob&to=alice&to=mallory", None, "x")
        );
        assert_ne!(
            base,
            print("POST", "/p?to=mallory&to=alice&cc=bob", None, "x")
        );
        assert_ne!(
            print("POST", "/p?flag&flag=1", None, "x"),
            print("POST", "/p?flag=1&flag", None, "x")
        );
        // One name, spelt twice: the application decodes both to `amount`.
        assert_ne!(
            print("POST", "/p?amount=1&amoun%74=1000", None, "x"),
            print("POST", "/p?amoun%74=1000&amount=1", None, "x")
        );
        assert_ne!(
            print("POST", "/p?a+b=1&a%20b=2", None, "x"),
            print("POST", "/p?a%20b=2&a+b=1", None, "x")
        );
        assert_eq!(decoded_name("bad%zz%4=x"), b"bad%zz%4");
    }

    #[test]
    fn a_fingerprint_held_for_later_is_the_requests_own_however_its_headers_are_listed() {
        let parts = http::Request::builder()
            .method("POST")
            .uri("/orders?b=2&a=1")
            .header("x-tenant", "t-1")
            .header("x-tenant", "t-2")
            .header(CONTENT_TYPE, "application/json")
            .body(())
            .unwrap()
            .into_parts()
            .0;
        let body = Bytes::from_static(br#"{"b":2,"a":1}"#);
        let tenant = HeaderName::from_static("x-tenant");
        let listings: [&[HeaderName]; 4] = [
            &[],
            std::slice::from_ref(&tenant),
            &[tenant.clone(), tenant.clone()],
            &[CONTENT_TYPE, tenant.clone(), CONTENT_TYPE],
        ];
        for names in listings {
            let now = of_request(&parts.method, &parts.uri, &parts.headers, &body, names).unwrap();
            let held = Fingerprinted::of(&parts, body.clone(), names);
            assert_eq!(held.fingerprint(names).unwrap(), now, "{names:?}");
        }
    }
}
