//! The parser: JSON text to a [`CanonicalJson`], numbers read exactly.

use std::collections::BTreeMap;

use super::{CanonicalJson as Canonical, Number};

/// Deeper nesting is not read as JSON.
pub(crate) const MAX_DEPTH: usize = 128;

/// The canonical value of `text`, or `None` when it is not JSON (or nests too deep, or has an
/// exponent beyond 64 bits, or gives one key twice).
pub(crate) fn parse(text: &[u8]) -> Option<Canonical> {
    let mut parser = Parser { text, at: 0 };
    parser.skip_whitespace();
    let value = parser.value(0)?;
    parser.skip_whitespace();
    (parser.at == text.len()).then_some(value)
}

/// The number `text` spells, when it is one JSON number and nothing else.
pub(crate) fn number(text: &[u8]) -> Option<Number> {
    let mut parser = Parser { text, at: 0 };
    let number = parser.number()?;
    (parser.at == text.len()).then_some(number)
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    fn eat_literal(&mut self, literal: &[u8]) -> Option<()> {
        let end = self.at + literal.len();
        (self.text.get(self.at..end)? == literal).then(|| self.at = end)
    }

    /// Moves past the bytes `keep` accepts, and returns them.
    fn take_while(&mut self, keep: impl Fn(u8) -> bool) -> &'a [u8] {
        let rest = self.text.get(self.at..).unwrap_or_default();
        let taken = &rest[..rest.iter().take_while(|&&byte| keep(byte)).count()];
        self.at += taken.len();
        taken
    }

    fn skip_whitespace(&mut self) {
        self.take_while(|byte| matches!(byte, b' ' | b'\t' | b'\n' | b'\r'));
    }

    fn value(&mut self, depth: usize) -> Option<Canonical> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => self.string().map(Canonical::Text),
            b't' => self.eat_literal(b"true").map(|()| Canonical::Bool(true)),
            b'f' => self.eat_literal(b"false").map(|()| Canonical::Bool(false)),
            b'n' => self.eat_literal(b"null").map(|()| Canonical::Null),
            b'-' | b'0'..=b'9' => self.number().map(Canonical::Number),
            _ => None,
        }
    }

    fn object(&mut self, depth: usize) -> Option<Canonical> {
        self.eat(b'{')?;
        let mut members = BTreeMap::new();
        self.skip_whitespace();
        if self.eat(b'}').is_some() {
            return Some(Canonical::Object(members));
        }
        loop {
            self.skip_whitespace();
            let key = self.string()?;
            self.skip_whitespace();
            self.eat(b':')?;
            self.skip_whitespace();
            let value = self.value(depth + 1)?;
            if members.insert(key, value).is_some() {
                // Parsers disagree on which of two values a handler sees: no value reading.
                return None;
            }
            self.skip_whitespace();
            if self.eat(b'}').is_some() {
                return Some(Canonical::Object(members));
            }
            self.eat(b',')?;
        }
    }

    fn array(&mut self, depth: usize) -> Option<Canonical> {
        self.eat(b'[')?;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.eat(b']').is_some() {
            return Some(Canonical::Array(items));
        }
        loop {
            self.skip_whitespace();
            items.push(self.value(depth + 1)?);
            self.skip_whitespace();
            if self.eat(b']').is_some() {
                return Some(Canonical::Array(items));
            }
            self.eat(b',')?;
        }
    }

    fn string(&mut self) -> Option<String> {
        self.eat(b'"')?;
        let mut out = String::new();
        loop {
            let plain = self.take_while(|byte| !matches!(byte, b'"' | b'\\' | 0..=0x1f));
            out.push_str(std::str::from_utf8(plain).ok()?);
            if self.eat(b'"').is_some() {
                return Some(out);
            }
            // Else a backslash, or a control character, which JSON strings may not hold.
            self.eat(b'\\')?;
            out.push(self.escape()?);
        }
    }

    fn escape(&mut self) -> Option<char> {
        let byte = self.peek()?;
        self.at += 1;
        Some(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex4()?;
                if !(0xD800..0xDC00).contains(&high) {
                    return char::from_u32(high);
                }
                self.eat_literal(b"\\u")?;
                let low = self.hex4()?;
                if !(0xDC00..0xE000).contains(&low) {
                    return None;
                }
                char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))?
            }
            _ => return None,
        })
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = std::str::from_utf8(self.text.get(self.at..self.at + 4)?).ok()?;
        let value = u32::from_str_radix(digits, 16).ok()?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.at += 4;
        Some(value)
    }

    fn number(&mut self) -> Option<Number> {
        let negative = self.eat(b'-').is_some();
        let integer = self.digits();
        if integer.is_empty() || (integer.len() > 1 && integer[0] == b'0') {
            return None;
        }
        let fraction = if self.eat(b'.').is_some() {
            let fraction = self.digits();
            if fraction.is_empty() {
                return None;
            }
            fraction
        } else {
            &[]
        };
        let mut exponent: i64 = 0;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            let exponent_negative = match self.peek() {
                Some(b'-') => {
                    self.at += 1;
                    true
                }
                Some(b'+') => {
                    self.at += 1;
                    false
                }
                _ => false,
            };
            let written = self.digits();
            if written.is_empty() {
                return None;
            }
            // Out of range is not a collision risk worth taking: such text is not read as JSON.
            let magnitude: i64 = std::str::from_utf8(written).ok()?.parse().ok()?;
            exponent = if exponent_negative {
                -magnitude
            } else {
                magnitude
            };
        }
        Number::from_parts(negative, integer, fraction, exponent)
    }

    fn digits(&mut self) -> &'a [u8] {
        self.take_while(|byte| byte.is_ascii_digit())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    use super::*;

    /// `super::parse`, failing the test instead of hanging it if the parser loops.
    fn parse(text: &[u8]) -> Option<Canonical> {
        let text = text.to_vec();
        let (sender, receiver) = mpsc::channel();
        thread::spawn(move || sender.send(super::parse(&text)));
        receiver
            .recv_timeout(Duration::from_secs(10))
            .expect("the parser went on for 10 s: it loops")
    }

    fn same(a: &str, b: &str) -> bool {
        parse(a.as_bytes()).unwrap() == parse(b.as_bytes()).unwrap()
    }

    #[test]
    fn numbers_match_by_exact_value() {
        assert!(!same(
            r#"{"amount":12345678901234567890123}"#,
            r#"{"amount":12345678901234567890124}"#
        ));
        assert!(!same("1.00000000000000001", "1.0"));
        assert!(!same("-9223372036854775809", "-9223372036854775810"));
        assert!(!same("1e400", "1e401"));
        assert!(same("1", "1.0"));
        assert!(same("1.00", "10e-1"));
        assert!(same("120", "1.2e2"));
        assert!(same("120", "1.2e+2"));
        assert!(same("1.2E+2", "12E1"));
        assert!(same("-0", "0.000"));
        assert!(!same("-1", "1"));
    }

    #[test]
    fn objects_ignore_order_and_strings_their_escapes() {
        assert!(same(
            r#"{"a":1,"b":[true,null]}"#,
            r#" { "b" : [ true , null ] , "a" : 1 } "#
        ));
        assert!(same(r#""\u0041\n\ud83d\ude00""#, "\"A\\n\u{1F600}\""));
        assert_eq!(
            parse(br#""\"\\\/\b\f\n\r\t\u0041\ud83d\ude00""#),
            Some(Canonical::Text("\"\\/\u{8}\u{c}\n\r\tA\u{1F600}".into()))
        );
        assert!(same("[true,false,null]", " [ true , false , null ] "));
        assert!(!same("false", "true"));
        assert!(!same("false", "null"));
        assert!(!same(r#"[1,2]"#, r#"[2,1]"#));
        assert_eq!(parse(br#"{"a":1,"a":2}"#), None);
    }

    #[test]
    fn what_is_not_json_is_refused() {
        for bad in [
            "",
            "{",
            "[1,]",
            "01",
            "1.",
            ".5",
            "1e",
            "-",
            "\"\\x\"",
            "\"\u{1}\"",
            "tru",
            "{\"a\" 1}",
            "1 2",
            "\"\\ud800\"",
            "1e99999999999999999999",
        ] {
            assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn a_value_at_the_deepest_level_is_read_and_one_below_it_is_not() {
        // n nested arrays or objects put the innermost one at depth n - 1.
        let arrays = |n: usize| "[".repeat(n) + &"]".repeat(n);
        let objects = |n: usize| r#"{"a":"#.repeat(n - 1) + "{}" + &"}".repeat(n - 1);
        let shapes: [fn(usize) -> String; 2] = [arrays, objects];
        for nested in shapes {
            assert!(parse(nested(MAX_DEPTH + 1).as_bytes()).is_some());
            assert_eq!(parse(nested(MAX_DEPTH + 2).as_bytes()), None);
        }
    }
}
