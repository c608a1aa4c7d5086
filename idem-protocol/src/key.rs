//! The grammar of the `Idempotency-Key` header's value: an RFC 8941 sf-string
//! (`"8e03978e-..."`, the IETF draft's form, parameters allowed and ignored) or a bare token
//! (`8e03978e-...`, Stripe's form), whose key is 1 to [`MAX_LEN`] visible ASCII characters.
//! Surrounding spaces and tabs are not part of it.

use std::fmt;

/// The longest key accepted, in characters.
pub const MAX_LEN: usize = 255;

const TOO_LONG_OR_EMPTY: &str = "the key must be 1 to 255 characters long";
const _: () = assert!(MAX_LEN == 255, "TOO_LONG_OR_EMPTY names MAX_LEN");

/// Why a header value is not a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidKey(&'static str);

impl InvalidKey {
    /// What is wrong, as a clause fit for a problem's detail.
    pub fn reason(&self) -> &'static str {
        self.0
    }
}

impl fmt::Display for InvalidKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for InvalidKey {}

/// The key a header value carries.
///
/// ```
/// use idem_protocol::key;
/// assert_eq!(key::parse(b"order-42").unwrap(), "order-42");
/// assert_eq!(key::parse(br#""order-42";v=1"#).unwrap(), "order-42");
/// assert!(key::parse(b"two words").is_err());
/// ```
pub fn parse(raw: &[u8]) -> Result<String, InvalidKey> {
    let raw = trim(raw);
    let key = match raw {
        [b'"', rest @ ..] => sf_string(rest).map_err(InvalidKey)?,
        bare => bare.to_vec(),
    };
    if key.is_empty() || key.len() > MAX_LEN {
        return Err(InvalidKey(TOO_LONG_OR_EMPTY));
    }
    if !key.iter().all(|b| b.is_ascii_graphic()) {
        return Err(InvalidKey("the key must be visible ASCII characters only"));
    }
    String::from_utf8(key).map_err(|_| InvalidKey("the key must be visible ASCII characters only"))
}

/// The bare form of a key as an ECMA-262 regular expression, for an OpenAPI schema's
/// `pattern`: 1 to [`MAX_LEN`] visible ASCII characters, the first not a `"` (which opens the
/// sf-string form). A value matches it exactly when [`parse`] reads it as itself.
///
/// ```
/// assert_eq!(idem_protocol::key::bare_pattern(), "^[!#-~][!-~]{0,254}$");
/// ```
pub fn bare_pattern() -> String {
    format!("^[!#-~][!-~]{{0,{}}}$", MAX_LEN - 1)
}

/// `key` as an sf-string, the form the IETF draft sends: quoted, with `"` and `\` escaped.
///
/// ```
/// assert_eq!(idem_protocol::key::to_sf_string(r#"a"b"#), r#""a\"b""#);
/// ```
pub fn to_sf_string(key: &str) -> String {
    let mut quoted = String::with_capacity(key.len() + 2);
    quoted.push('"');
    for c in key.chars() {
        if matches!(c, '"' | '\\') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    quoted
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

    #[test]
    fn a_refusal_says_why_in_its_reason_and_its_text() {
        let refused = parse(b"").unwrap_err();
        assert_eq!(refused.reason(), TOO_LONG_OR_EMPTY);
        assert_eq!(refused.to_string(), TOO_LONG_OR_EMPTY);
    }

    #[test]
    fn parameter_values_are_read_to_their_end_and_no_further() {
        // A string value with escapes, and a byte sequence, each followed by another parameter.
        assert_eq!(key(r#""k";p="a\"b\\";q=1"#).unwrap(), "k");
        assert_eq!(key(r#""k";p=:aGk=:;q=?1"#).unwrap(), "k");
        // A byte sequence that never closes, a token cut by a space, and no value at all.
        assert!(key(r#""k";p=:abc"#).is_err());
        assert!(key(r#""k";p=1 x"#).is_err());
        assert!(key(r#""k";p=;q=1"#).is_err());
    }

    fn key(raw: &str) -> Result<String, InvalidKey> {
        parse(raw.as_bytes())
    }

    #[test]
    fn sf_strings_and_bare_tokens_give_the_same_key() {
        let uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324";
        assert_eq!(key(&format!("\"{uuid}\"")).unwrap(), uuid);
        assert_eq!(key(uuid).unwrap(), uuid);
        assert_eq!(key(&format!(" \t{uuid} ")).unwrap(), uuid);
        assert_eq!(key(r#""a\"b\\c""#).unwrap(), r#"a"b\c"#);
    }

    #[test]
    fn an_sf_string_reads_back_as_its_key() {
        for original in ["plain", r#"a"b"#, r"back\slash", r#""\"#] {
            assert_eq!(key(&to_sf_string(original)).unwrap(), original);
        }
    }

    #[test]
    fn sf_string_parameters_are_accepted_and_ignored() {
        for raw in [
            r#""abc";p=1"#,
            r#""abc";p"#,
            r#""abc"; p=1;q="x;y""#,
            r#""abc";p=:cHJldGVuZA==:;flag=?1"#,
        ] {
            assert_eq!(key(raw).unwrap(), "abc", "{raw}");
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
            "caf\u{e9}",
        ] {
            assert!(key(raw).is_err(), "{raw:?}");
        }
        assert!(key(&"k".repeat(256)).is_err());
        assert_eq!(key(&"k".repeat(255)).unwrap(), "k".repeat(255));
    }

    #[test]
    fn the_bare_pattern_matches_exactly_the_values_read_as_themselves() {
        let pattern = regex_lite::Regex::new(&bare_pattern()).unwrap();
        let long = "k".repeat(255);
        let too_long = "k".repeat(256);
        let table = [
            "order-42",
            "8e03978e-40d5-43e8-bc93-6894a57f9324",
            "a\"b",
            "!",
            "~",
            "#hash",
            "a;b=c",
            long.as_str(),
            too_long.as_str(),
            "",
            "order 42",
            "caf\u{e9}-1",
            "\"quoted\"",
            "\"",
            " padded",
            "padded\t",
            "tab\tkey",
            "line\nfeed",
            "del\u{7f}",
            "nul\u{0}",
        ];
        for raw in table {
            let read_as_itself = parse(raw.as_bytes()).is_ok_and(|key| key == raw);
            assert_eq!(pattern.is_match(raw), read_as_itself, "{raw:?}");
        }
    }
}
