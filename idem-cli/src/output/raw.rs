//! What `get --raw` writes: the outcome's bytes as stored when stdout is a file or a pipe; on
//! a terminal, which would obey them, every character it acts on escaped, as redis-cli does.

use std::borrow::Cow;

use crate::visible::visible_bytes;

/// `bytes` as `get --raw` writes them: as they are, unless stdout is a `terminal`; then with
/// every character a terminal acts on (and the backslash) escaped as a table shows it, bytes
/// that are no UTF-8 as `\xNN`, and a line feed after them.
pub(crate) fn raw_output(bytes: &[u8], terminal: bool) -> Cow<'_, [u8]> {
    if !terminal {
        return Cow::Borrowed(bytes);
    }
    let mut shown = visible_bytes(bytes);
    shown.push('\n');
    Cow::Owned(shown.into_bytes())
}

/// The note for stderr when a `terminal` got `bytes` escaped, as `written`, rather than as
/// stored.
pub(crate) fn escaped_note(bytes: &[u8], written: &[u8], terminal: bool) -> Option<&'static str> {
    (terminal && written.strip_suffix(b"\n") != Some(bytes)).then_some(
        "note: stdout is a terminal, so the outcome's control characters are written escaped; \
         redirect it (`> outcome`) for its bytes exactly",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLANTED: &[u8] = b"{\"a\":\"\x1b]0;pwned\x07\x1b[2J\"}\xff";

    #[test]
    fn a_file_or_a_pipe_gets_the_bytes_exactly() {
        let written = raw_output(PLANTED, false);
        assert_eq!(written, PLANTED);
        assert_eq!(escaped_note(PLANTED, &written, false), None);
    }

    #[test]
    fn a_terminal_gets_what_it_would_obey_escaped() {
        let written = raw_output(PLANTED, true);
        assert!(!written.iter().any(|b| matches!(b, 0x1b | 0x07 | 0xff)));
        assert_eq!(
            &*written,
            &b"{\"a\":\"\\x1b]0;pwned\\x07\\x1b[2J\"}\\xff\n"[..]
        );
        assert!(escaped_note(PLANTED, &written, true).is_some());
    }

    #[test]
    fn plain_text_on_a_terminal_reads_as_it_is_without_a_note() {
        let written = raw_output(b"{\"id\":42}", true);
        assert_eq!(&*written, b"{\"id\":42}\n");
        assert_eq!(escaped_note(b"{\"id\":42}", &written, true), None);
    }
}
