//! Text from a store or a key, made harmless for a terminal: control characters (C0, DEL, C1)
//! and the bidirectional overrides that reorder what a line seems to say are written as
//! escapes (`\x1b`, `\u{202e}`), so that no record can move the cursor, clear the screen, set
//! the window title or disguise a key. `--json` needs none of this: JSON escapes them itself.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every character a terminal would obey written as an escape; `keep_newlines`
/// leaves line feeds in messages that are meant to have several lines.
pub(crate) fn visible(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    let obeyed = |c: char| hostile(c) && !(keep_newlines && c == '\n');
    if !text.chars().any(obeyed) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !obeyed(c) {
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
fn hostile(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_terminal_obeys_is_escaped_and_the_rest_kept() {
        assert_eq!(visible("order-42 ü 注文", false), "order-42 ü 注文");
        assert_eq!(
            visible("o-1\x1b[2J\x1b]0;pwned\x07\r", false),
            "o-1\\x1b[2J\\x1b]0;pwned\\x07\\x0d"
        );
        assert_eq!(
            visible("a\u{202e}b\u{9b}c\x7f", false),
            "a\\u{202e}b\\x9bc\\x7f"
        );
        assert_eq!(visible("one\ntwo\x1b", true), "one\ntwo\\x1b");
        assert_eq!(visible("one\ntwo", false), "one\\x0atwo");
    }
}
