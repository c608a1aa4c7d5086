//! Store URLs fit for messages: a URL's password and the values of its parameters named like
//! secrets hidden, whatever its scheme, and those secrets named for the messages that must
//! not show them.

/// `url` fit for messages, whatever its scheme (and text that is no URL too): the password of
/// its user info and the value of every query parameter whose name reads like a secret
/// ([`secret_name`]) written `***`.
///
/// The user info ends at the last `@`, so a password with a raw `/`, `?` or `@` is still
/// hidden. That `@` may instead be one of the path or the query (`host:5432/db?user=a@b`):
/// then `host`'s `:` reads as a password's start, and what follows up to that `@` is
/// hidden too. More hidden than needed, never less.
pub(crate) fn redacted(url: &str) -> String {
    redact(url).0
}

/// The secrets [`redacted`] hides in `url`: its password and its secret parameters' values,
/// each also percent-decoded, for the messages that must not show them.
pub(crate) fn secrets_of(url: &str) -> Vec<String> {
    let mut secrets = Vec::new();
    for secret in redact(url).1 {
        let decoded = percent_decoded(&secret);
        if decoded != secret {
            secrets.push(decoded);
        }
        secrets.push(secret);
    }
    secrets
}

/// [`redacted`]'s text, and what it hid.
fn redact(url: &str) -> (String, Vec<String>) {
    let mut hidden = Vec::new();
    let (mut shown, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), url),
    };
    let rest = match rest.rfind('@') {
        Some(at) => match rest[..at].split_once(':') {
            Some((user, password)) => {
                shown.push_str(&masked_params(user, &mut hidden));
                shown.push_str(":***@");
                hidden.push(password.to_owned());
                // The `@` may be one of a secret parameter's value (`?password=p@ss`): what
                // follows it is that value's end, hidden too, and the value read as a
                // parameter is a secret for the scrubber.
                let tail = &rest[at + 1..];
                if in_secret_value(&rest[..at]) {
                    masked_params(rest, &mut hidden);
                    let end = value_end(tail);
                    hidden.push(tail[..end].to_owned());
                    shown.push_str("***");
                    &tail[end..]
                } else {
                    tail
                }
            }
            None => rest,
        },
        None => rest,
    };
    shown.push_str(&masked_params(rest, &mut hidden));
    hidden.retain(|secret| !secret.is_empty());
    (shown, hidden)
}

/// Whether `text` ends inside the value of a query parameter named like a secret.
fn in_secret_value(text: &str) -> bool {
    let Some(query) = text.find('?') else {
        return false;
    };
    let last = text[query..]
        .rfind(['?', '&', ';'])
        .map_or(query, |at| query + at + 1);
    text[last..]
        .split_once('=')
        .is_some_and(|(name, _)| secret_name(name))
}

/// `text` with the value of every `name=value` whose name reads like a secret written `***`
/// (and pushed on `hidden`). A value runs to the next `&` that starts another `name=value` (a
/// raw `&`, `#` or `?` in a password is hidden with it).
fn masked_params(text: &str, hidden: &mut Vec<String>) -> String {
    let mut shown = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(equals) = rest.find('=') {
        let name_start = rest[..equals]
            .rfind(['?', '&', ';', '/', '@', ':', ',', '#'])
            .map_or(0, |at| at + 1);
        shown.push_str(&rest[..=equals]);
        let after = &rest[equals + 1..];
        if !secret_name(&rest[name_start..equals]) {
            rest = after;
            continue;
        }
        shown.push_str("***");
        let end = value_end(after);
        hidden.push(after[..end].to_owned());
        rest = &after[end..];
    }
    shown.push_str(rest);
    shown
}

/// Where a parameter's value that starts `after` ends: at the first `&` followed by another
/// `name=value`, or at the end.
fn value_end(after: &str) -> usize {
    let mut from = 0;
    while let Some(amp) = after[from..].find('&').map(|at| from + at) {
        let segment = &after[amp + 1..];
        let segment = &segment[..segment.find('&').unwrap_or(segment.len())];
        if segment.contains('=') {
            return amp;
        }
        from = amp + 1;
    }
    after.len()
}

/// Words that make a parameter's name a secret's, wherever they are in it (case aside):
/// `password`, `sslpassword`, `passwd`, `pwd`, `token`, `client_secret`, `credentials`,
/// `x-amz-signature`, `auth`, `api_key`...
const SECRET_WORDS: &[&str] = &[
    "pass",
    "pwd",
    "token",
    "secret",
    "credential",
    "signature",
    "auth",
    "apikey",
    "api_key",
    "api-key",
    "private",
];

/// Endings that make a parameter's name a secret's: `key`, `access_key`, `sig`...
const SECRET_ENDINGS: &[&str] = &["key", "sig"];

/// Whether a parameter called `name` (percent-encoded or not) may hold a secret.
fn secret_name(name: &str) -> bool {
    let name = percent_decoded(name).to_ascii_lowercase();
    SECRET_WORDS.iter().any(|word| name.contains(word))
        || SECRET_ENDINGS.iter().any(|ending| name.ends_with(ending))
}

/// `text` with its `%XX` escapes decoded (bytes that are no UTF-8 replaced).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (bytes[at], hex) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                at += 3;
            }
            (byte, _) => {
                decoded.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(
            redacted("postgres://idem:s3cret@db:5432/app?sslmode=require"),
            "postgres://idem:***@db:5432/app?sslmode=require"
        );
        assert_eq!(redacted("redis://127.0.0.1/"), "redis://127.0.0.1/");
        assert_eq!(redacted("redis://:pw@h"), "redis://:***@h");
    }

    #[test]
    fn a_password_with_a_raw_question_mark_slash_or_at_is_hidden() {
        for (url, shown) in [
            ("redis://u:hun?ter2@host", "redis://u:***@host"),
            ("postgres://u:hun/ter2@host/db", "postgres://u:***@host/db"),
            (
                "redis://u:hun@ter2@host:6379/0",
                "redis://u:***@host:6379/0",
            ),
            (
                "redis+cluster://u:pw@a:1,b:2/?x=1",
                "redis+cluster://u:***@a:1,b:2/?x=1",
            ),
            ("rediss://u:p#w@h:1#insecure", "rediss://u:***@h:1#insecure"),
            ("u:hunter2@127.0.0.1:6379", "u:***@127.0.0.1:6379"),
        ] {
            assert_eq!(redacted(url), shown, "{url}");
        }
    }

    #[test]
    fn an_at_sign_in_the_path_or_query_hides_more_never_less() {
        let shown = redacted("postgres://host:5432/db?user=me@corp.com&password=s3cret");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert_eq!(
            redacted("postgres://host/db?password=a@b"),
            "postgres://host/db?password=***"
        );
        for url in [
            "postgres://db:5432/app?password=hunter@2x",
            "postgres://[::1]:5432/app?password=hunter@2x",
            "postgresql://db:5432/app?user=u&sslpassword=hunter@2x&sslmode=require",
        ] {
            let shown = redacted(url);
            assert!(
                !shown.contains("2x") && !shown.contains("hunter"),
                "{url}: {shown}"
            );
            let secrets = secrets_of(url);
            assert!(
                secrets.iter().any(|s| s == "hunter@2x"),
                "{url}: {secrets:?}"
            );
        }
    }

    #[test]
    fn secret_query_parameters_are_hidden_whatever_the_scheme() {
        for (url, shown) in [
            (
                "postgres://u@host/db?password=s3cret",
                "postgres://u@host/db?password=***",
            ),
            (
                "postgresql://host/db?user=u&password=s3cret&sslmode=require",
                "postgresql://host/db?user=u&password=***&sslmode=require",
            ),
            (
                "postgres://host/db?sslmode=verify-full&SSLPassword=s3cret",
                "postgres://host/db?sslmode=verify-full&SSLPassword=***",
            ),
            (
                "redis://host/0?token=t&X-Amz-Signature=abc&api_key=k&AccessKey=k2",
                "redis://host/0?token=***&X-Amz-Signature=***&api_key=***&AccessKey=***",
            ),
            (
                "dynamodb://t?client_secret=s&auth=a&pwd=p&passwd=p2&credentials=c&sig=g",
                "dynamodb://t?client_secret=***&auth=***&pwd=***&passwd=***&credentials=***&sig=***",
            ),
            ("redis://h/?pass%77ord=s", "redis://h/?pass%77ord=***"),
            ("redis://h/?password=a&b&db=1", "redis://h/?password=***&db=1"),
            ("redis://h/?password=a?b=c", "redis://h/?password=***"),
        ] {
            assert_eq!(redacted(url), shown, "{url}");
        }
        assert_eq!(
            redacted("postgres://h/db?application_name=idem&sslmode=disable"),
            "postgres://h/db?application_name=idem&sslmode=disable"
        );
    }

    #[test]
    fn the_secrets_hidden_are_known_decoded_too() {
        assert_eq!(
            secrets_of("postgres://u:p%2Fw@h/db?password=s3&sslmode=disable"),
            vec!["p/w", "p%2Fw", "s3"]
        );
        assert!(secrets_of("redis://h:1/0").is_empty());
    }
}
