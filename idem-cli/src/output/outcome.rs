//! A record's outcome as `get` prints it: after the details in people's form, and as the
//! `outcome_format` and `outcome_value` fields of its JSON document.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use idem_core::Key;
use idem_http::{RecordedBody, RecordedResponse};
use serde::Serialize;
use serde_json::value::RawValue;

use super::table::details;
use crate::failure::shell_quoted;
use crate::outcome::{Decoded, Shown};
use crate::visible::{hostile, visible_bytes};

/// How much of a body, or of a value that is no JSON, is shown: the first 4 KiB. `--raw`
/// writes the whole.
pub(crate) const SHOWN_BYTES: usize = 4096;

/// How much of a JSON value is shown, indented: the first 64 KiB of the indented text.
pub(crate) const SHOWN_JSON_BYTES: usize = 64 * 1024;

/// How many headers, and how many trailers, of a stored response are shown.
const SHOWN_HEADERS: usize = 100;

/// The deepest indentation: a value nested deeper is indented no further, so that its
/// indented text grows with its length, not with the square of its depth.
const MAX_INDENT: usize = 32;

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
                let (indented, read) = pretty(value.get(), SHOWN_JSON_BYTES);
                for line in indented.lines() {
                    text.push_str("  ");
                    text.push_str(&visible_json(line));
                    text.push('\n');
                }
                text.push_str(&not_shown(
                    value.get().len() - read,
                    "bytes of the value",
                    key,
                ));
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
    for (label, fields) in [
        ("header", &response.headers),
        ("trailer", &response.trailers),
    ] {
        pairs.extend(
            fields
                .iter()
                .take(SHOWN_HEADERS)
                .map(|(name, value)| (label, format!("{name}: {value}"))),
        );
        if fields.len() > SHOWN_HEADERS {
            pairs.push((
                label,
                format!("... {} more not shown", fields.len() - SHOWN_HEADERS),
            ));
        }
    }
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
    text.push_str(&not_shown(bytes.len() - shown.len(), "bytes", key));
    text
}

/// The line that says `hidden` more `what` are not shown, and how to get them all; nothing
/// when none are hidden.
fn not_shown(hidden: usize, what: &str, key: &Key) -> String {
    if hidden == 0 {
        return String::new();
    }
    // Quoted with every character a terminal would obey escaped: nothing left to escape.
    let raw = shell_quoted(key.as_str());
    format!("  ... {hidden} more {what} not shown: `idem get --raw {raw}` writes them all\n")
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

/// `json`, valid JSON, indented by two spaces a level (up to [`MAX_INDENT`] levels): only
/// whitespace between tokens changes, so every number reads as stored. Stops once the
/// indented text reaches `budget` bytes; returns it, and how many bytes of `json` it holds.
fn pretty(json: &str, budget: usize) -> (String, usize) {
    let mut out = String::with_capacity(json.len().min(budget) * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = json.char_indices().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth.min(MAX_INDENT)));
    };
    while let Some((at, c)) = chars.next() {
        if out.len() >= budget {
            return (out, at);
        }
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
                while chars.peek().is_some_and(|(_, c)| c.is_ascii_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some((_, '}' | ']'))) {
                    out.extend(chars.next().map(|(_, c)| c));
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
    (out, json.len())
}

/// A line of JSON made harmless for a terminal, still JSON: a character a terminal would obey
/// (only ever inside a string: JSON escapes the C0 controls itself, not DEL, C1 or the
/// bidirectional overrides) written as its `\uXXXX` escape.
pub(crate) fn visible_json(line: &str) -> String {
    let mut shown = String::with_capacity(line.len());
    for c in line.chars() {
        // A line feed is only ever whitespace between tokens: JSON escapes one in a string.
        if c != '\n' && hostile(c) {
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
            pretty(stored, SHOWN_JSON_BYTES).0,
            "{\n  \"id\": 12345678901234567890123,\n  \"tags\": [],\n  \"s\": \"a,{b}\\\"[\",\n  \
             \"n\": [\n    1,\n    {\n      \"x\": 0.1\n    }\n  ],\n  \"e\": {}\n}"
        );
        assert_eq!(pretty("\"plain\"", 100), ("\"plain\"".to_owned(), 7));
    }

    #[test]
    fn a_deep_or_long_value_is_shown_in_bounded_space() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let (shown, read) = pretty(&deep, SHOWN_JSON_BYTES);
        assert!(
            shown.len() < SHOWN_JSON_BYTES + 2 * MAX_INDENT + 2,
            "{}",
            shown.len()
        );
        assert!(read < deep.len(), "the rest is left to --raw");
        assert!(shown.lines().all(|line| line.len() <= 2 * MAX_INDENT + 1));
        let long = format!("[{}]", vec!["1"; 100_000].join(","));
        let (shown, read) = pretty(&long, 1000);
        assert!(shown.len() < 1100 && read < long.len());
        let key = Key::parse("idem|f|-|\u{1b}x").unwrap();
        let note = not_shown(5, "bytes", &key);
        assert!(note.contains(r"$'idem|f|-|\x1bx'"), "{note}");
        assert!(!note.contains('\u{1b}'));
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
