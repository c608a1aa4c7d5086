//! A record's outcome as `get` prints it: after the details in people's form, and as the
//! `outcome_format` and `outcome_value` fields of its JSON document.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use idem_core::Key;
use idem_http::{RecordedBody, RecordedResponse};
use serde::Serialize;
use serde_json::value::RawValue;

use super::table::details;
use super::{visible, visible_bytes};
use crate::failure::shell_quoted;
use crate::outcome::{Decoded, Shown};

/// How much of a body, or of a value that is no JSON, is shown: the first 4 KiB. `--raw`
/// writes the whole.
pub(crate) const SHOWN_BYTES: usize = 4096;

/// What a sealed outcome says without a keyring.
const PASS_A_KEYRING: &str = "pass IDEM_KEYRING or --keyring-file to read it";

/// The lines that follow a record's details: empty for a record without an outcome value.
pub(crate) fn text(shown: &Shown, key: &Key) -> String {
    match shown {
        Shown::Nothing => String::new(),
        Shown::Sealed { key_id } => format!(
            "\n{}",
            details(&[(
                "outcome value",
                format!("sealed{}: {PASS_A_KEYRING}", with_key(key_id.as_deref()))
            )])
        ),
        Shown::Unopened { key_id, reason } => format!(
            "\n{}",
            details(&[(
                "outcome value",
                format!(
                    "sealed{}, and the keyring given does not open it: {reason}",
                    with_key(key_id.as_deref())
                )
            )])
        ),
        Shown::Value { bytes, decoded, .. } => match decoded {
            Decoded::Json(value) => {
                let mut text = String::from("\noutcome value (JSON):\n");
                for line in pretty(value.get()).lines() {
                    text.push_str("  ");
                    text.push_str(&visible_json(line));
                    text.push('\n');
                }
                text
            }
            Decoded::Http(response) => http_text(response, key),
            Decoded::Bytes => {
                let mut text = format!("\noutcome value ({} bytes, no JSON):\n", bytes.len());
                text.push_str(&start(bytes, key));
                text
            }
        },
    }
}

/// ` with key `ID``, or nothing when the value names none.
fn with_key(key_id: Option<&str>) -> String {
    key_id
        .map(|id| format!(" with key `{id}`"))
        .unwrap_or_default()
}

fn http_text(response: &RecordedResponse, key: &Key) -> String {
    let mut pairs = vec![("status", response.status.to_string())];
    pairs.extend(
        response
            .headers
            .iter()
            .map(|(name, value)| ("header", format!("{name}: {value}"))),
    );
    pairs.extend(
        response
            .trailers
            .iter()
            .map(|(name, value)| ("trailer", format!("{name}: {value}"))),
    );
    let codings = response.content_codings();
    let mut body_lines = String::new();
    let body = match &response.body {
        RecordedBody::NotKept(why) => format!("not kept: {why}"),
        RecordedBody::Kept(body) if body.is_empty() => "none".to_owned(),
        RecordedBody::Kept(body) if !codings.is_empty() => format!(
            "{} bytes, {}-coded: not shown (`--raw` writes the stored response, body in base64)",
            body.len(),
            codings.join(", ")
        ),
        RecordedBody::Kept(body) => {
            body_lines = start(body, key);
            format!("{} bytes", body.len())
        }
        // A body of a kind this idem-http does not know.
        _ => "not shown".to_owned(),
    };
    pairs.push(("body", body));
    let mut text = String::from("\nresponse (stored by idem-http):\n");
    for line in details(&pairs).lines() {
        text.push_str("  ");
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(&body_lines);
    text
}

/// The first [`SHOWN_BYTES`] of `bytes`, indented, one line of theirs a line, escaped
/// ([`visible_bytes`]: a byte that is no UTF-8 as `\xNN`), and how many bytes are not shown.
fn start(bytes: &[u8], key: &Key) -> String {
    let shown = &bytes[..shown_len(bytes)];
    let mut text = String::new();
    for line in shown.split(|byte| *byte == b'\n') {
        text.push_str("  ");
        text.push_str(&visible_bytes(line));
        text.push('\n');
    }
    let hidden = bytes.len() - shown.len();
    if hidden > 0 {
        let raw = visible(&shell_quoted(key.as_str())).into_owned();
        text.push_str(&format!(
            "  ... {hidden} more bytes not shown: `idem get --raw {raw}` writes them all\n"
        ));
    }
    text
}

/// How many bytes of `bytes` are shown: at most [`SHOWN_BYTES`], ending on a character's
/// boundary when the cut falls inside UTF-8.
fn shown_len(bytes: &[u8]) -> usize {
    if bytes.len() <= SHOWN_BYTES {
        return bytes.len();
    }
    // A UTF-8 character is at most 4 bytes: step back over at most 3 continuation bytes.
    (SHOWN_BYTES - 3..=SHOWN_BYTES)
        .rev()
        .find(|&end| std::str::from_utf8(&bytes[..end]).is_ok())
        .unwrap_or(SHOWN_BYTES)
}

/// `json`, valid JSON, indented by two spaces a level: only whitespace between tokens
/// changes, so every number reads as stored.
fn pretty(json: &str) -> String {
    let mut out = String::with_capacity(json.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = json.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}' | ']')) {
                    out.extend(chars.next());
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_ascii_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

/// A line of JSON made harmless for a terminal, still JSON: a character a terminal would obey
/// (only ever inside a string: JSON escapes the C0 controls itself, not DEL, C1 or the
/// bidirectional overrides) written as its `\uXXXX` escape.
fn visible_json(line: &str) -> String {
    let mut shown = String::with_capacity(line.len());
    for c in line.chars() {
        if super::visible::hostile(c) {
            shown.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            shown.push(c);
        }
    }
    shown
}

/// The `outcome_format` and `outcome_value` fields of `get --json`.
#[derive(Debug, Serialize)]
pub(crate) struct OutcomeDoc<'a> {
    outcome_format: Option<&'static str>,
    outcome_value: Option<ValueDoc<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ValueDoc<'a> {
    Json(&'a RawValue),
    Http(HttpDoc<'a>),
    Bytes {
        bytes: usize,
        base64: String,
        truncated: bool,
    },
    Sealed {
        key_id: Option<&'a str>,
    },
    Unopened {
        key_id: Option<&'a str>,
        error: &'a str,
    },
}

#[derive(Debug, Serialize)]
struct HttpDoc<'a> {
    status: u16,
    headers: &'a [(String, String)],
    trailers: &'a [(String, String)],
    content_codings: Vec<&'a str>,
    body_bytes: Option<usize>,
    body: Option<String>,
    body_form: Option<&'static str>,
    body_truncated: bool,
    body_not_kept: Option<&'static str>,
}

impl<'a> OutcomeDoc<'a> {
    /// The fields of `shown`.
    pub(crate) fn of(shown: &'a Shown) -> Self {
        let (format, value) = match shown {
            Shown::Nothing => (None, None),
            Shown::Sealed { key_id } => (
                Some("sealed"),
                Some(ValueDoc::Sealed {
                    key_id: key_id.as_deref(),
                }),
            ),
            Shown::Unopened { key_id, reason } => (
                Some("unopened"),
                Some(ValueDoc::Unopened {
                    key_id: key_id.as_deref(),
                    error: reason,
                }),
            ),
            Shown::Value { bytes, decoded, .. } => match decoded {
                Decoded::Json(value) => (Some("json"), Some(ValueDoc::Json(value))),
                Decoded::Http(response) => (Some("http"), Some(ValueDoc::Http(http_doc(response)))),
                Decoded::Bytes => {
                    let shown = shown_len(bytes);
                    (
                        Some("bytes"),
                        Some(ValueDoc::Bytes {
                            bytes: bytes.len(),
                            base64: BASE64.encode(&bytes[..shown]),
                            truncated: shown < bytes.len(),
                        }),
                    )
                }
            },
        };
        OutcomeDoc {
            outcome_format: format,
            outcome_value: value,
        }
    }
}

fn http_doc(response: &RecordedResponse) -> HttpDoc<'_> {
    let content_codings = response.content_codings();
    let mut doc = HttpDoc {
        status: response.status,
        headers: &response.headers,
        trailers: &response.trailers,
        content_codings,
        body_bytes: None,
        body: None,
        body_form: None,
        body_truncated: false,
        body_not_kept: None,
    };
    match &response.body {
        RecordedBody::Kept(body) => {
            let shown = &body[..shown_len(body)];
            doc.body_bytes = Some(body.len());
            doc.body_truncated = shown.len() < body.len();
            (doc.body, doc.body_form) = match std::str::from_utf8(shown) {
                Ok(text) if doc.content_codings.is_empty() => (Some(text.to_owned()), Some("text")),
                _ => (Some(BASE64.encode(shown)), Some("base64")),
            };
        }
        RecordedBody::NotKept(why) => doc.body_not_kept = Some(why),
        _ => {}
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_indented_and_its_numbers_kept() {
        let stored =
            r#"{"id":12345678901234567890123,"tags":[],"s":"a,{b}\"[","n":[1,{"x":0.1}],"e":{}}"#;
        assert_eq!(
            pretty(stored),
            "{\n  \"id\": 12345678901234567890123,\n  \"tags\": [],\n  \"s\": \"a,{b}\\\"[\",\n  \
             \"n\": [\n    1,\n    {\n      \"x\": 0.1\n    }\n  ],\n  \"e\": {}\n}"
        );
        assert_eq!(pretty("\"plain\""), "\"plain\"");
    }

    #[test]
    fn what_a_terminal_obeys_in_json_is_a_json_escape() {
        let line = "\"a\u{9b}b\u{202e}c\u{7f}\"";
        assert_eq!(visible_json(line), r#""a\u009bb\u202ec\u007f""#);
        let parsed: String = serde_json::from_str(&visible_json(line)).unwrap();
        assert_eq!(parsed, "a\u{9b}b\u{202e}c\u{7f}");
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let text = format!("{}ü", "a".repeat(SHOWN_BYTES - 1));
        assert_eq!(shown_len(text.as_bytes()), SHOWN_BYTES - 1);
        assert_eq!(shown_len(&[0xff; SHOWN_BYTES + 5]), SHOWN_BYTES);
        assert_eq!(shown_len(b"short"), 5);
    }
}
