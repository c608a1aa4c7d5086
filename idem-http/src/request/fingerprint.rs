//! The request's fingerprint: method, path, canonical query, listed headers and body.

use http::header::CONTENT_TYPE;
use http::request::Parts;
use http::HeaderName;
use idem_core::json::CanonicalJson;
use idem_core::{Error, Fingerprint, Fingerprinter};
use serde::{Serialize, Serializer};

/// Fingerprints a buffered request, so that a retry matches only when it asks for the same
/// thing.
pub(crate) fn of_request(
    parts: &Parts,
    body: &[u8],
    headers: &[HeaderName],
) -> Result<Fingerprint, Error> {
    let mut fp = Fingerprinter::new();
    fp.add(parts.method.as_str())?;
    fp.add(parts.uri.path())?;
    fp.add(&sorted_query(parts.uri.query().unwrap_or("")))?;
    for name in headers {
        let values: Vec<Raw<'_>> = parts
            .headers
            .get_all(name)
            .iter()
            .map(|value| Raw(value.as_bytes()))
            .collect();
        fp.add(&(name.as_str(), values))?;
    }
    match json_body(parts, body) {
        Some(value) => fp.add(&BodyPrint::Json(value))?,
        None => fp.add(&BodyPrint::Bytes(Raw(body)))?,
    };
    Ok(fp.finish())
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
fn json_body(parts: &Parts, body: &[u8]) -> Option<CanonicalJson> {
    let content_type = parts.headers.get(CONTENT_TYPE)?.to_str().ok()?;
    let essence = content_type.split(';').next()?.trim().to_ascii_lowercase();
    let is_json = essence == "application/json" || essence.ends_with("+json");
    if !is_json {
        return None;
    }
    CanonicalJson::parse(body)
}

#[derive(Serialize)]
enum BodyPrint<'a> {
    Json(CanonicalJson),
    Bytes(Raw<'a>),
}

/// Bytes fingerprinted as one byte string rather than a sequence of numbers.
struct Raw<'a>(&'a [u8]);

impl Serialize for Raw<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.0)
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
        of_request(&parts, body.as_bytes(), &[]).unwrap()
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
}
