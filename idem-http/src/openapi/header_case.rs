//! Header names as the specifications write them.

use http::HeaderName;

/// `name` with each word capitalised, as the specifications write it: `Idempotency-Key` for
/// `idempotency-key`. Header names are case-insensitive; this is for the reader of the document.
pub(crate) fn title_case(name: &HeaderName) -> String {
    name.as_str()
        .split('-')
        .map(|word| {
            let mut chars = word.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_word_is_capitalised() {
        assert_eq!(
            title_case(&crate::request::key_header::IDEMPOTENCY_KEY),
            "Idempotency-Key"
        );
        assert_eq!(title_case(&http::header::RETRY_AFTER), "Retry-After");
    }
}
