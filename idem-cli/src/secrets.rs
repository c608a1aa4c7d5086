//! Secrets from the command line that no message may show: the store URL's password and
//! secret parameters, and the DynamoDB endpoint's. A driver's error may quote the URL it was
//! given (or a part of it) in its own words, so every message on stderr is read for them, not
//! only the URLs `idem` prints itself ([`crate::redact::redacted`]).

use std::borrow::Cow;
use std::sync::Mutex;

/// Secrets shorter than this are not searched for in messages: they would hide letters of
/// every word, and a secret that short guards nothing.
const SHORTEST: usize = 3;

static HIDDEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Hides the secrets of `url` (see [`crate::redact::secrets_of`]) from every later message.
pub(crate) fn hide_url(url: &str) {
    let mut hidden = HIDDEN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for secret in crate::redact::secrets_of(url) {
        if secret.len() >= SHORTEST && !hidden.contains(&secret) {
            hidden.push(secret);
        }
    }
    // The longest first, so that a secret holding another is hidden whole.
    hidden.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
}

/// `text` with every hidden secret written `***`.
pub(crate) fn scrubbed(text: &str) -> Cow<'_, str> {
    let hidden = HIDDEN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if !hidden.iter().any(|secret| text.contains(secret.as_str())) {
        return Cow::Borrowed(text);
    }
    let mut shown = text.to_owned();
    for secret in hidden.iter() {
        shown = shown.replace(secret.as_str(), "***");
    }
    Cow::Owned(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_secret_is_never_in_a_message() {
        hide_url("redis://u:hun%3Fter2@h:1/?token=t0ken&db=0");
        assert_eq!(
            scrubbed("connecting to h:1 as u with hun?ter2 (hun%3Fter2), t0ken"),
            "connecting to h:1 as u with *** (***), ***"
        );
        assert_eq!(scrubbed("nothing secret"), "nothing secret");
    }
}
