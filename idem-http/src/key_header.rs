//! Reading the `Idempotency-Key` header: an sf-string or a bare token.

use http::HeaderMap;

/// The request header that carries the key.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The longest key accepted, in characters.
pub const MAX_HEADER_KEY_LEN: usize = 255;

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
    let raw = trim(raw);
    let key = match raw {
        [b'"', inner @ .., b'"'] => {
            // An sf-string may escape `"` and `\`; anything else after a backslash is invalid.
            let mut key = Vec::with_capacity(inner.len());
            let mut bytes = inner.iter();
            while let Some(&byte) = bytes.next() {
                match byte {
                    b'\\' => match bytes.next() {
                        Some(&escaped @ (b'"' | b'\\')) => key.push(escaped),
                        _ => return KeyHeader::Invalid("the sf-string key has a bad escape"),
                    },
                    b'"' => return KeyHeader::Invalid("the sf-string key has an unescaped quote"),
                    _ => key.push(byte),
                }
            }
            key
        }
        [b'"', ..] => return KeyHeader::Invalid("the sf-string key has no closing quote"),
        bare => bare.to_vec(),
    };
    if key.is_empty() || key.len() > MAX_HEADER_KEY_LEN {
        return KeyHeader::Invalid("the key must be 1 to 255 characters long");
    }
    if !key.iter().all(|b| b.is_ascii_graphic()) {
        return KeyHeader::Invalid("the key must be visible ASCII characters only");
    }
    match String::from_utf8(key) {
        Ok(key) => KeyHeader::Present(key),
        Err(_) => KeyHeader::Invalid("the key must be visible ASCII characters only"),
    }
}

fn trim(raw: &[u8]) -> &[u8] {
    let start = raw.iter().position(|b| !matches!(b, b' ' | b'\t'));
    let end = raw.iter().rposition(|b| !matches!(b, b' ' | b'\t'));
    match (start, end) {
        (Some(start), Some(end)) => &raw[start..=end],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(raw: &str) -> KeyHeader {
        parse(raw.as_bytes())
    }

    #[test]
    fn sf_strings_and_bare_tokens_give_the_same_key() {
        let uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324";
        assert_eq!(key(&format!("\"{uuid}\"")), KeyHeader::Present(uuid.into()));
        assert_eq!(key(uuid), KeyHeader::Present(uuid.into()));
        assert_eq!(key(r#""a\"b\\c""#), KeyHeader::Present(r#"a"b\c"#.into()));
    }

    #[test]
    fn empty_long_and_invisible_keys_are_invalid() {
        for raw in [
            "",
            "\"\"",
            "a b",
            "\"a b\"",
            "\"open",
            r#""bad\n""#,
            "tab\tkey",
        ] {
            assert!(matches!(key(raw), KeyHeader::Invalid(_)), "{raw:?}");
        }
        assert!(matches!(key(&"k".repeat(256)), KeyHeader::Invalid(_)));
        assert_eq!(key(&"k".repeat(255)), KeyHeader::Present("k".repeat(255)));
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
