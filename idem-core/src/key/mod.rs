//! Idempotency keys: an unambiguous encoding of namespace, function name, scope and key parts.

pub(crate) mod names;
mod part;

pub use part::KeyPart;

use std::fmt::{self, Write as _};

use crate::error::Error;

/// The longest stored key, in bytes. DynamoDB allows 2 048 bytes in a partition key; half of
/// that leaves room for a store's own prefix and keeps Redis keys cheap to compare.
pub const MAX_KEY_LEN: usize = 1024;

/// A complete stored key. Built with [`KeyBuilder`]; stores use [`Key::as_str`] as the record's
/// primary key (after adding their own prefix).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(String);

impl Key {
    /// A key already encoded, as sealing stores it.
    #[cfg(feature = "seal")]
    pub(crate) fn from_encoded(encoded: String) -> Self {
        Key(encoded)
    }

    /// The encoded key.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key exactly as idem prints it (in errors, logs and [`Key::as_str`]), for an operator
    /// who copied it from there, or a store listing its records. Refuses text longer than
    /// [`MAX_KEY_LEN`] or without the `|` after the namespace; other text is taken as it is,
    /// and names whatever record it names.
    ///
    /// ```
    /// use idem_core::{Key, KeyBuilder};
    /// let built = KeyBuilder::new("idem", "charge").part("order-42").finish()?;
    /// assert_eq!(Key::parse(built.as_str())?, built);
    /// assert!(Key::parse("no-namespace").is_err());
    /// # Ok::<(), idem_core::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<Key, Error> {
        if text.len() > MAX_KEY_LEN {
            return Err(Error::InvalidKey(format!(
                "the key is {} bytes long, more than the limit of {MAX_KEY_LEN}",
                text.len()
            )));
        }
        if !text.contains('|') {
            return Err(Error::InvalidKey(format!(
                "`{text}` is not an idempotency key: keys read `namespace|function|scope|parts`, \
                 or `namespace|#digest` under a key digest"
            )));
        }
        Ok(Key(text.to_owned()))
    }

    /// The function's name as encoded in the key (`%` and `|` escaped), or `None` for a key
    /// stored as its digest, which hides it.
    ///
    /// ```
    /// use idem_core::KeyBuilder;
    /// let key = KeyBuilder::new("idem", "charge").part("order-42").finish()?;
    /// assert_eq!(key.function(), Some("charge"));
    /// # Ok::<(), idem_core::Error>(())
    /// ```
    pub fn function(&self) -> Option<&str> {
        let mut slots = self.0.split('|');
        let name = slots.nth(1)?;
        // A digest is `namespace|#hex`, with no slot after it; a built key has at least two.
        let digest = slots.next().is_none() && name.starts_with('#');
        (!digest).then_some(name)
    }

    /// The text every key of function `name` in `namespace` starts with, encoded as keys are:
    /// what a listing filters stored keys by. Keys stored as digests
    /// ([`Idempotency::with_key_digest`](crate::Idempotency::with_key_digest)) hide their
    /// function, so no digest starts with it.
    ///
    /// ```
    /// use idem_core::{Key, KeyBuilder};
    /// let key = KeyBuilder::new("idem", "charge").part("order-42").finish()?;
    /// assert!(key.as_str().starts_with(&Key::function_prefix("idem", "charge")));
    /// assert!(!key.as_str().starts_with(&Key::function_prefix("idem", "char")));
    /// # Ok::<(), idem_core::Error>(())
    /// ```
    pub fn function_prefix(namespace: &str, name: &str) -> String {
        let mut prefix = String::with_capacity(namespace.len() + name.len() + 2);
        escape_into(&mut prefix, namespace);
        prefix.push('|');
        escape_into(&mut prefix, name);
        prefix.push('|');
        prefix
    }

    /// The scope the key was built with, as encoded in it (`%` and `|` escaped as `%25` and
    /// `%7C`), or `None` for a key without one.
    ///
    /// ```
    /// use idem_core::KeyBuilder;
    /// let key = KeyBuilder::new("idem", "charge").scope(Some("tenant|7")).part("a|b").finish()?;
    /// assert_eq!(key.scope(), Some("tenant%7C7"));
    /// assert_eq!(KeyBuilder::new("idem", "charge").finish()?.scope(), None);
    /// # Ok::<(), idem_core::Error>(())
    /// ```
    pub fn scope(&self) -> Option<&str> {
        // `namespace|name|scope|…`: every component escapes `|`, so the third slot is the
        // scope's, `-` for none and `=…` for one.
        let slot = self.0.split('|').nth(2)?;
        slot.strip_prefix('=')
    }

    /// The key under a store's own `prefix`: the prefix escaped like every key component, a
    /// `|`, then the key. The first unescaped `|` ends the prefix, so no prefix and key pair can
    /// spell another pair's (`"billing"` + `idem|…` is `billing|idem|…`, while `""` +
    /// `billingidem|…` is `|billingidem|…`); an empty prefix keeps its delimiter for that
    /// reason.
    pub fn with_prefix(&self, prefix: &str) -> String {
        let mut prefixed = String::with_capacity(prefix.len() + 1 + self.0.len());
        escape_into(&mut prefixed, prefix);
        prefixed.push('|');
        prefixed.push_str(&self.0);
        prefixed
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Builds a [`Key`] from its parts.
///
/// The encoding is `namespace|name|scope|part|part…`, where every component escapes `%` and `|`
/// (as `%25` and `%7C`) and a missing scope is written `-` while a present one starts with `=`.
/// Two different sequences of parts therefore never give the same key: `"ab" + "c"` is
/// `ab|c`, `"a" + "bc"` is `a|bc`. The scope always has its slot, whether or not
/// [`scope`](KeyBuilder::scope) was called and whenever it was, so a key part can never pass
/// for a scope.
#[derive(Clone, Debug)]
pub struct KeyBuilder {
    /// `namespace|name`.
    prefix: String,
    /// `|scope` when one was given.
    scope: Option<String>,
    /// `|part|part…`.
    parts: String,
    /// A key part whose `KeyPart` impl failed.
    failed: bool,
}

impl KeyBuilder {
    /// Starts a key in `namespace` for the function called `name`.
    pub fn new(namespace: &str, name: &str) -> Self {
        let mut prefix = String::with_capacity(64);
        escape_into(&mut prefix, namespace);
        prefix.push('|');
        escape_into(&mut prefix, name);
        KeyBuilder {
            prefix,
            scope: None,
            parts: String::new(),
            failed: false,
        }
    }

    /// Sets the scope (tenant, principal) the key belongs to; `None` (the default) for none.
    /// An empty or blank scope is none ([`idem_protocol::scope::effective`]): it would be one
    /// scope shared by everyone who gave it.
    pub fn scope(mut self, scope: Option<&str>) -> Self {
        self.scope = idem_protocol::scope::effective(scope).map(|scope| {
            let mut encoded = String::with_capacity(scope.len() + 1);
            encoded.push('=');
            escape_into(&mut encoded, scope);
            encoded
        });
        self
    }

    /// Appends one key part.
    pub fn part<P: KeyPart + ?Sized>(mut self, part: &P) -> Self {
        self.push_part(part);
        self
    }

    /// Appends one key part in place.
    pub fn push_part<P: KeyPart + ?Sized>(&mut self, part: &P) {
        self.parts.push('|');
        let mut escaper = Escaper(&mut self.parts);
        self.failed |= part.write_key_part(&mut escaper).is_err();
    }

    /// Finishes the key, refusing one longer than [`MAX_KEY_LEN`] or one whose part failed to
    /// write itself.
    pub fn finish(self) -> Result<Key, Error> {
        if self.failed {
            return Err(Error::InvalidKey(
                "a key part's `KeyPart` implementation returned an error".into(),
            ));
        }
        let scope = self.scope.as_deref().unwrap_or("-");
        let len = self.prefix.len() + 1 + scope.len() + self.parts.len();
        if len > MAX_KEY_LEN {
            return Err(Error::InvalidKey(format!(
                "the encoded key is {len} bytes long, more than the limit of {MAX_KEY_LEN}; \
                 use shorter key parts or leave `key` out to key by the arguments' fingerprint"
            )));
        }
        let mut encoded = self.prefix;
        encoded.reserve_exact(len - encoded.len());
        encoded.push('|');
        encoded.push_str(scope);
        encoded.push_str(&self.parts);
        Ok(Key(encoded))
    }
}

fn escape_into(out: &mut String, text: &str) {
    Escaper(out)
        .write_str(text)
        .expect("writing to a String cannot fail");
}

/// Escapes `%` and `|` while writing into a key.
struct Escaper<'a>(&'a mut String);

impl fmt::Write for Escaper<'_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        for c in text.chars() {
            match c {
                '%' => self.0.push_str("%25"),
                '|' => self.0.push_str("%7C"),
                c => self.0.push(c),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;
    use std::sync::Arc;

    fn key(parts: &[&str]) -> String {
        let mut builder = KeyBuilder::new("ns", "f").scope(None);
        for part in parts {
            builder.push_part(*part);
        }
        builder.finish().unwrap().0
    }

    #[test]
    fn splitting_parts_differently_gives_different_keys() {
        assert_ne!(key(&["ab", "c"]), key(&["a", "bc"]));
        assert_ne!(key(&["a|b"]), key(&["a", "b"]));
        assert_ne!(key(&["a%7Cb"]), key(&["a|b"]));
        assert_ne!(key(&[""]), key(&[]));
    }

    #[test]
    fn scope_none_and_scope_text_differ() {
        let none = KeyBuilder::new("ns", "f").scope(None).finish().unwrap();
        let dash = KeyBuilder::new("ns", "f")
            .scope(Some("-"))
            .finish()
            .unwrap();
        assert_ne!(none, dash);
        assert_eq!(none.scope(), None);
        assert_eq!(dash.scope(), Some("-"));
    }

    #[test]
    fn an_empty_or_blank_scope_is_no_scope() {
        let none = KeyBuilder::new("ns", "f").scope(None).finish().unwrap();
        for blank in ["", " ", "\t\n"] {
            let key = KeyBuilder::new("ns", "f")
                .scope(Some(blank))
                .finish()
                .unwrap();
            assert_eq!(key, none, "{blank:?}");
            assert_eq!(key.scope(), None);
        }
    }

    #[test]
    fn the_scope_is_read_back_whatever_the_namespace_and_name_hold() {
        let key = KeyBuilder::new("a|=b", "c|d")
            .scope(Some("x|y"))
            .part("=p|q")
            .finish()
            .unwrap();
        assert_eq!(key.scope(), Some("x%7Cy"));
        let unscoped = KeyBuilder::new("a|=b", "c|d").part("=p").finish().unwrap();
        assert_eq!(unscoped.scope(), None);
    }

    #[test]
    fn a_part_cannot_pass_for_the_scope() {
        let unscoped = KeyBuilder::new("ns", "f")
            .part("-")
            .part("x")
            .finish()
            .unwrap();
        let none = KeyBuilder::new("ns", "f")
            .scope(None)
            .part("x")
            .finish()
            .unwrap();
        assert_ne!(unscoped, none);
        let fake = KeyBuilder::new("ns", "f").part("=t").finish().unwrap();
        let real = KeyBuilder::new("ns", "f")
            .scope(Some("t"))
            .finish()
            .unwrap();
        assert_ne!(fake, real);
        let late = KeyBuilder::new("ns", "f")
            .part("x")
            .scope(Some("t"))
            .finish()
            .unwrap();
        let early = KeyBuilder::new("ns", "f")
            .scope(Some("t"))
            .part("x")
            .finish()
            .unwrap();
        assert_eq!(late, early, "the scope has one slot whenever it is set");
    }

    #[test]
    fn a_failing_key_part_is_an_invalid_key_not_a_panic() {
        struct Broken;
        impl KeyPart for Broken {
            fn write_key_part(&self, _: &mut dyn fmt::Write) -> fmt::Result {
                Err(fmt::Error)
            }
        }
        let err = KeyBuilder::new("ns", "f")
            .part(&Broken)
            .finish()
            .unwrap_err();
        assert!(matches!(err, Error::InvalidKey(_)), "{err}");
    }

    #[test]
    fn namespace_and_name_are_escaped() {
        let a = KeyBuilder::new("a|b", "c").scope(None).finish().unwrap();
        let b = KeyBuilder::new("a", "b|c").scope(None).finish().unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn layout_is_readable() {
        let key = KeyBuilder::new("idem", "payments::charge")
            .scope(Some("tenant-7"))
            .part("order-42")
            .part(&3u32)
            .finish()
            .unwrap();
        assert_eq!(key.as_str(), "idem|payments::charge|=tenant-7|order-42|3");
    }

    #[test]
    fn store_prefixes_are_delimited() {
        let key = |namespace: &str| KeyBuilder::new(namespace, "charge").finish().unwrap();
        let billing = key("idem").with_prefix("billing");
        let joined = key("billingidem").with_prefix("");
        assert_eq!(billing, "billing|idem|charge|-");
        assert_eq!(joined, "|billingidem|charge|-");
        assert_ne!(
            key("b").with_prefix("a|"),
            key("").with_prefix("a"),
            "a `|` in the prefix is escaped"
        );
    }

    #[test]
    fn overlong_key_is_refused_with_the_limit() {
        let long = "x".repeat(MAX_KEY_LEN);
        let err = KeyBuilder::new("ns", "f")
            .scope(None)
            .part(long.as_str())
            .finish()
            .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidKey(m) if m.contains("1024")),
            "{err}"
        );
        assert_eq!(err.http_status(), 400);
    }

    fn text(part: &dyn KeyPart) -> Result<String, fmt::Error> {
        let mut out = String::new();
        part.write_key_part(&mut out).map(|()| out)
    }

    #[test]
    fn uuids_options_and_non_zero_integers_are_key_parts() {
        let id = uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        assert_eq!(text(&id).unwrap(), "01234567-89ab-cdef-0123-456789abcdef");
        assert_eq!(text(&Some("o-1")).unwrap(), text(&"o-1").unwrap());
        assert!(text(&None::<String>).is_err(), "None is refused");
        assert_eq!(text(&std::num::NonZeroU64::new(42).unwrap()).unwrap(), "42");
        assert_eq!(text(&std::rc::Rc::new(7u8)).unwrap(), "7");
    }

    #[test]
    fn strings_and_every_pointer_to_a_part_write_its_text() {
        assert_eq!(text(&String::from("o-1")).unwrap(), "o-1");
        assert_eq!(text(&Cow::<str>::Borrowed("o-2")).unwrap(), "o-2");
        assert_eq!(text(&&"o-3").unwrap(), "o-3");
        assert_eq!(text(&&mut String::from("o-4")).unwrap(), "o-4");
        assert_eq!(text(&Box::new(5u8)).unwrap(), "5");
        assert_eq!(text(&Arc::new(6u8)).unwrap(), "6");
    }

    #[test]
    fn a_parsed_key_is_the_text_it_was_given_up_to_the_limit() {
        let at_limit = format!("ns|{}", "k".repeat(MAX_KEY_LEN - 3));
        assert_eq!(Key::parse(&at_limit).unwrap().as_str(), at_limit);
        assert_eq!(Key::parse("ns|f|-|a").unwrap().to_string(), "ns|f|-|a");
        let over = format!("{at_limit}k");
        let refused = Key::parse(&over).unwrap_err().to_string();
        assert!(refused.contains("1025 bytes"), "{refused}");
    }

    #[test]
    fn a_built_key_is_refused_one_byte_past_the_limit_with_its_length() {
        // `ns|f` `|-` `|` and the part: 7 bytes around it.
        let fits = KeyBuilder::new("ns", "f")
            .part(&"a".repeat(MAX_KEY_LEN - 7))
            .finish()
            .unwrap();
        assert_eq!(fits.as_str().len(), MAX_KEY_LEN);
        let refused = KeyBuilder::new("ns", "f")
            .scope(Some("t"))
            .part(&"a".repeat(MAX_KEY_LEN - 7))
            .finish()
            .unwrap_err()
            .to_string();
        assert!(refused.contains("is 1025 bytes long"), "{refused}");
    }

    #[test]
    fn a_function_named_like_a_digest_is_still_a_function() {
        let key = KeyBuilder::new("ns", "#h").finish().unwrap();
        assert_eq!(key.function(), Some("#h"));
        assert_eq!(Key::parse("ns|#h").unwrap().function(), None);
        assert_eq!(Key::function_prefix("a|b", "c%"), "a%7Cb|c%25|");
    }

    #[cfg(feature = "seal")]
    #[test]
    fn an_encoded_key_is_kept_as_it_is() {
        assert_eq!(Key::from_encoded("ns|#ab".into()).as_str(), "ns|#ab");
    }
}
