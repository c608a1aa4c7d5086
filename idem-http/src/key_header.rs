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
        [b'"', rest @ ..] => match sf_string(rest) {
            Ok(key) => key,
            Err(reason) => return KeyHeader::Invalid(reason),
        },
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

/// The sf-string after its opening quote: its unescaped content, then any RFC 8941 parameters
/// (`"abc";p=1`), which are checked for form and ignored.
fn sf_string(after_quote: &[u8]) -> Result<Vec<u8>, &'static str> {
    let mut key = Vec::with_capacity(after_quote.len());
    let mut bytes = after_quote.iter().enumerate();
    loop {
        match bytes.next() {
            None => return Err("the sf-string key has no closing quote"),
            Some((_, b'\\')) => match bytes.next() {
                Some((_, &escaped @ (b'"' | b'\\'))) => key.push(escaped),
                _ => return Err("the sf-string key has a bad escape"),
            },
            Some((end, b'"')) => {
                parameters(&after_quote[end + 1..])?;
                return Ok(key);
            }
            Some((_, &byte)) => key.push(byte),
        }
    }
}

/// Checks `;key=value` parameters after an sf-string. Their values are bare items of any
/// kind; the layer has no use for them.
fn parameters(mut rest: &[u8]) -> Result<(), &'static str> {
    const MALFORMED: &str = "the sf-string key is followed by something other than \
                             `;name=value` parameters";
    while let [b';', after @ ..] = rest {
        let after = trim_start(after);
        let name_len = after
            .iter()
            .position(|&b| !is_parameter_name_byte(b))
            .unwrap_or(after.len());
        if name_len == 0 || !matches!(after[0], b'a'..=b'z' | b'*') {
            return Err("a parameter of the sf-string key has no lowercase name");
        }
        rest = &after[name_len..];
        if let [b'=', value @ ..] = rest {
            let value_len = bare_item_len(value).ok_or(MALFORMED)?;
            rest = &value[value_len..];
        }
    }
    if rest.is_empty() {
        Ok(())
    } else {
        Err(MALFORMED)
    }
}

fn is_parameter_name_byte(byte: u8) -> bool {
    matches!(byte, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' | b'*')
}

/// The length of the bare item (string, token, number, byte sequence or boolean) that starts
/// `value`, if one does.
fn bare_item_len(value: &[u8]) -> Option<usize> {
    match value.first()? {
        b'"' => {
            let mut escaped = false;
            for (i, &byte) in value.iter().enumerate().skip(1) {
                match (escaped, byte) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => return Some(i + 1),
                    _ => {}
                }
            }
            None
        }
        b':' => {
            let end = value[1..].iter().position(|&b| b == b':')?;
            Some(end + 2)
        }
        _ => {
            let len = value
                .iter()
                .position(|&b| !b.is_ascii_graphic() || matches!(b, b';' | b',' | b'"'))
                .unwrap_or(value.len());
            (len > 0).then_some(len)
        }
    }
}

fn trim_start(raw: &[u8]) -> &[u8] {
    let start = raw.iter().position(|&b| b != b' ').unwrap_or(raw.len());
    &raw[start..]
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
    fn sf_string_parameters_are_accepted_and_ignored() {
        for raw in [
            r#""abc";p=1"#,
            r#""abc";p"#,
            r#""abc"; p=1;q="x;y""#,
            r#""abc";p=:cHJldGVuZA==:;flag=?1"#,
        ] {
            assert_eq!(key(raw), KeyHeader::Present("abc".into()), "{raw}");
        }
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
            "\"abc\";",
            "\"abc\";P=1",
            "\"abc\" trailing",
            "\"abc\";p=\"open",
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
