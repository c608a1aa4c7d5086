//! Text from a store or a key, made harmless for a terminal: control characters (C0 with the
//! line feed, DEL, C1) and the bidirectional overrides that reorder what a line seems to say
//! are written as escapes (`\x1b`, `\x0a`, `\u{202e}`), so that no record can move the cursor,
//! clear the screen, set the window title, forge a line or disguise a key. In a table or a
//! record's details a backslash is written `\\` too, so that a key holding the text `\x1b`
//! never reads like one holding an ESC; messages keep theirs, since the commands they suggest
//! quote keys for the shell. `--json` needs none of this: JSON escapes them itself.

use std::borrow::Cow;
use std::fmt::Write;

/// A value as a table or a record's details show it: every character a terminal would obey,
/// and the backslash, written as an escape.
pub(crate) fn visible(text: &str) -> Cow<'_, str> {
    escaped(text, true)
}

/// A message as it reaches stderr: the command line's secrets hidden
/// ([`crate::secrets::scrubbed`]), every character a terminal would obey written as an escape.
pub(crate) fn visible_message(text: &str) -> Cow<'_, str> {
    match crate::secrets::scrubbed(text) {
        Cow::Borrowed(text) => escaped(text, false),
        Cow::Owned(text) => Cow::Owned(escaped(&text, false).into_owned()),
    }
}

/// Bytes from a store that need not be UTF-8 (a stored key that is no idempotency key), as a
/// table or a document shows them: their UTF-8 as [`visible`] shows it, every byte that is no
/// UTF-8 as `\xNN`. Since `visible` doubles backslashes, a byte so written never reads like
/// the text `\xNN`.
pub(crate) fn visible_bytes(bytes: &[u8]) -> String {
    let mut shown = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        shown.push_str(&visible(chunk.valid()));
        for byte in chunk.invalid() {
            let _ = write!(shown, "\\x{byte:02x}");
        }
    }
    shown
}

fn escaped(text: &str, backslash: bool) -> Cow<'_, str> {
    let escaped = |c: char| (backslash && c == '\\') || hostile(c);
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if backslash && c == '\\' {
            shown.push_str("\\\\");
        } else if !hostile(c) {
            shown.push(c);
        } else if u32::from(c) < 0x100 {
            let _ = write!(shown, "\\x{:02x}", u32::from(c));
        } else {
            let _ = write!(shown, "\\u{{{:x}}}", u32::from(c));
        }
    }
    Cow::Owned(shown)
}

/// Whether a terminal acts on `c` rather than showing it.
pub(crate) fn hostile(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_terminal_obeys_is_escaped_and_the_rest_kept() {
        assert_eq!(visible("order-42 ü 注文"), "order-42 ü 注文");
        assert_eq!(
            visible("o-1\x1b[2J\x1b]0;pwned\x07\r"),
            "o-1\\x1b[2J\\x1b]0;pwned\\x07\\x0d"
        );
        assert_eq!(visible("a\u{202e}b\u{9b}c\x7f"), "a\\u{202e}b\\x9bc\\x7f");
        assert_eq!(visible("one\nreleased two"), "one\\x0areleased two");
    }

    #[test]
    fn every_bidirectional_control_is_escaped() {
        // The Arabic letter mark, the marks, the embeddings and overrides, the isolates.
        for c in [
            '\u{61c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}',
        ] {
            assert!(hostile(c), "{:04x}", u32::from(c));
            assert_eq!(
                visible(&format!("a{c}b")),
                format!("a\\u{{{:x}}}b", u32::from(c))
            );
        }
        assert!(
            !hostile('\u{61b}') && !hostile('\u{627}'),
            "Arabic text itself is shown"
        );
    }

    #[test]
    fn bytes_that_are_no_utf8_are_written_as_hex_escapes() {
        assert_eq!(
            visible_bytes(b"idem|f|-|\xff\xfeok"),
            "idem|f|-|\\xff\\xfeok"
        );
        assert_eq!(visible_bytes(b"a\x1b\\xff\xc3"), "a\\x1b\\\\xff\\xc3");
        assert_eq!(visible_bytes("ü".as_bytes()), "ü");
        assert_ne!(visible_bytes(b"\xff"), visible_bytes(b"\\xff"));
    }

    #[test]
    fn an_escape_and_the_text_of_one_print_apart() {
        assert_ne!(visible("k\x1b"), visible("k\\x1b"));
        assert_eq!(visible("k\\x1b"), "k\\\\x1b");
        assert_eq!(
            visible_message("idem forget 'it'\\''s'"),
            "idem forget 'it'\\''s'"
        );
        assert_eq!(visible_message("a\nb\x1b"), "a\\x0ab\\x1b");
    }
}
