//! Step values as the `steps` column holds them: a `jsonb` object from step name to value.
//!
//! A step's value is the JSON the engine serialised, and it must come back byte for byte.
//! Stored as JSON, `jsonb` would re-normalise it (whitespace, key order, duplicate keys, number
//! spelling), so each value is stored as a JSON *string* holding the value's text instead:
//! `jsonb` keeps a string's characters as they are, and operators can still read a step with
//! `steps ->> 'charge'`. Only values in plain ASCII without NUL are stored so: a `jsonb` string
//! cannot hold NUL, and ASCII is the same in every server encoding. Any other value (non-ASCII
//! text, or bytes that are not text) is stored as `{"hex": "<its bytes in hex>"}`.

use serde_json::{Map, Value};

/// The key of the object a value is stored in when it cannot be a string.
const HEX: &str = "hex";

/// The JSON text of the `jsonb` value that stores `value`.
pub(crate) fn value_json(value: &[u8]) -> String {
    let stored = match std::str::from_utf8(value) {
        Ok(text) if value.is_ascii() && !value.contains(&0) => Value::String(text.to_owned()),
        _ => Value::Object(Map::from_iter([(
            HEX.to_owned(),
            Value::String(hex(value)),
        )])),
    };
    stored.to_string()
}

/// The step values, by name, in the text of a `steps` column; why not when it is not an
/// object of values [`value_json`] writes.
pub(crate) fn parse(text: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let Ok(Value::Object(steps)) = serde_json::from_str::<Value>(text) else {
        return Err("is not a JSON object".to_owned());
    };
    steps
        .into_iter()
        .map(|(name, stored)| {
            let value = match stored {
                Value::String(text) => Some(text.into_bytes()),
                Value::Object(object) => match object.get(HEX) {
                    Some(Value::String(digits)) if object.len() == 1 => unhex(digits),
                    _ => None,
                },
                _ => None,
            };
            match value {
                Some(value) => Ok((name, value)),
                None => Err(format!(
                    "holds step `{name}` as neither a string nor {{\"{HEX}\": <hex digits>}}"
                )),
            }
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|byte| [byte >> 4, byte & 0xf])
        .map(|nibble| char::from(DIGITS[usize::from(nibble)]))
        .collect()
}

fn unhex(digits: &str) -> Option<Vec<u8>> {
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .as_bytes()
        .chunks(2)
        .map(|pair| {
            let pair = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(pair, 16).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(value: &[u8]) -> Vec<u8> {
        let object = format!("{{\"step\": {}}}", value_json(value));
        let mut parsed = parse(&object).expect("a value it wrote parses");
        assert_eq!(parsed.len(), 1);
        parsed.remove(0).1
    }

    #[test]
    fn ascii_json_is_stored_as_its_text() {
        let value = br#"{"b": 1.50, "a": [1e2, "x\"y"]}"#;
        let stored: Value = serde_json::from_str(&value_json(value)).unwrap();
        assert_eq!(
            stored,
            Value::String(String::from_utf8(value.to_vec()).unwrap())
        );
        assert_eq!(round_trip(value), value);
        assert_eq!(round_trip(b""), b"");
    }

    #[test]
    fn any_other_bytes_are_stored_in_hex() {
        for value in [
            "\"caf\u{e9} \u{1f600}\"".as_bytes(),
            b"\"a\0b\"",
            &[0xff, 0x00, 0x80, 0x7f],
        ] {
            assert_eq!(round_trip(value), value, "{value:?}");
        }
        assert_eq!(value_json(&[0xab, 0x01]), r#"{"hex":"ab01"}"#);
    }

    #[test]
    fn anything_else_is_refused_with_a_reason() {
        for text in [
            "[]",
            "not json",
            r#"{"charge": 7}"#,
            r#"{"charge": {"hex": "abc"}}"#,
            r#"{"charge": {"hex": "zz"}}"#,
            r#"{"charge": {"hex": "ab", "more": 1}}"#,
        ] {
            assert!(parse(text).is_err(), "{text}");
        }
        let reason = parse(r#"{"charge": null}"#).unwrap_err();
        assert!(reason.contains("`charge`"), "{reason}");
    }
}
