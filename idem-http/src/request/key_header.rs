//! Reading the `Idempotency-Key` header: one value, in the contract's grammar
//! ([`idem_protocol::key`]).

use http::HeaderMap;
use idem_protocol::key;

pub use idem_protocol::header::IDEMPOTENCY_KEY;

/// The longest key accepted, in characters.
pub const MAX_HEADER_KEY_LEN: usize = key::MAX_LEN;

/// What the request says about its key.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum KeyHeader {
    Absent,
    Present(String),
    /// The header is malformed; the reason goes into the problem's detail.
    Invalid(&'static str),
}

pub(crate) fn read(headers: &HeaderMap) -> KeyHeader {
    let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
    let Some(value) = values.next() else {
        return KeyHeader::Absent;
    };
    if values.next().is_some() {
        return KeyHeader::Invalid("the request carries more than one `Idempotency-Key` header");
    }
    parse(value.as_bytes())
}

/// The `Idempotency-Key` values as received, for the detail of a 400: lossy, and cut short so
/// that a huge header does not make a huge answer.
pub(crate) fn as_received(headers: &HeaderMap) -> String {
    const SHOWN: usize = 300;
    let values: Vec<String> = headers
        .get_all(IDEMPOTENCY_KEY)
        .iter()
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .collect();
    let joined = values.join(", ");
    match joined.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}...", &joined[..cut]),
        None => joined,
    }
}

fn parse(raw: &[u8]) -> KeyHeader {
    match key::parse(raw) {
        Ok(key) => KeyHeader::Present(key),
        Err(invalid) => KeyHeader::Invalid(invalid.reason()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_is_read_in_the_contracts_grammar() {
        let mut headers = HeaderMap::new();
        headers.append(IDEMPOTENCY_KEY, r#""abc";p=1"#.parse().unwrap());
        assert_eq!(read(&headers), KeyHeader::Present("abc".into()));
        headers.insert(IDEMPOTENCY_KEY, "a b".parse().unwrap());
        assert!(matches!(read(&headers), KeyHeader::Invalid(_)));
    }

    #[test]
    fn two_headers_are_invalid() {
        let mut headers = HeaderMap::new();
        headers.append(IDEMPOTENCY_KEY, "a".parse().unwrap());
        headers.append(IDEMPOTENCY_KEY, "b".parse().unwrap());
        assert!(matches!(read(&headers), KeyHeader::Invalid(_)));
        assert_eq!(as_received(&headers), "a, b");
        assert_eq!(read(&HeaderMap::new()), KeyHeader::Absent);
    }
}
