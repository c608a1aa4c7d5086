//! Canonical JSON and number equality: the one rule for "the same value" that fingerprints,
//! the HTTP layer's request bodies and the Lambda handler's keys and payload validation share.
//!
//! # The rule
//!
//! - **A number is its exact decimal value.** `1`, `1.0`, `1.00`, `10e-1` and `1e0` are one
//!   number; `1.00000000000000001` is another, and `12345678901234567890123` is not its
//!   neighbour: JSON text is read digit for digit, with no limit but a 64-bit exponent.
//! - **Rust numbers are numbers too.** An integer of any width (`u8` to `u128`, `i8` to
//!   `i128`) is its value. A float (`f32`, `f64`) is the value of the shortest decimal that
//!   reads back as it (of those, the nearest; on a tie, the one whose last digit is even):
//!   the digits `serde_json` writes for it. `0.1f64` is `0.1`, and `100.0` is `100`, equal to
//!   `100u8` and to the JSON text `1e2`. An `f32` is read at its own shortest decimal, so
//!   `0.1f32` is `0.1` too.
//! - `-0` is `0`; every NaN is one value; infinities are themselves.
//! - Objects are maps: key order and whitespace do not matter; an object that gives a key
//!   twice is not read at all (parsers disagree on which value wins). Strings are their
//!   characters, whatever the escapes. Arrays keep their order.
//!
//! A [`Number`]'s `Display` is its canonical text (`42`, `-1.5`, `1e40`): two numbers are
//! equal exactly when their texts are. Fingerprints ([`Fingerprint`](crate::Fingerprint))
//! encode every number by this rule, whether it comes from a Rust integer or float, a
//! `serde_json::Value` or a [`CanonicalJson`] tree, so that each of these fingerprints alike:
//!
//! ```
//! use idem_core::json::CanonicalJson;
//! use idem_core::Fingerprint;
//! # #[derive(serde::Serialize)] struct Order { a: u8 }
//!
//! let parsed = CanonicalJson::parse(br#"{"a": 1e2}"#).unwrap();
//! let print = Fingerprint::of(&parsed)?;
//! assert_eq!(print, Fingerprint::of(&serde_json::json!({"a": 100}))?);
//! assert_eq!(print, Fingerprint::of(&serde_json::json!({"a": 100.0}))?);
//! assert_eq!(print, Fingerprint::of(&Order { a: 100 })?);
//! assert_ne!(print, Fingerprint::of(&serde_json::json!({"a": 101}))?);
//! # Ok::<(), idem_core::Error>(())
//! ```
//!
//! Integers are encoded as cheaply as ever; only floats and decimals from JSON text pay for
//! their decimal form.

mod number;
mod parse;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};

pub(crate) use number::{encode_f32, encode_f64, Encoded, StackText, TOKEN as NUMBER_TOKEN};
pub use number::{Number, EXACT_IN_F64};

/// A JSON value read by [the rule](self): objects without key order, strings by their
/// characters, numbers by their exact value.
///
/// It serializes as the JSON value it is (`null` as unit, an object as a map, a number as a
/// [`Number`]), so that its fingerprint is that of the same value built in Rust.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CanonicalJson {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, exactly.
    Number(Number),
    /// A string, escapes resolved. Named `Text`: a public item named `String` would make the
    /// compiler spell `std::string::String` in full in every error of a crate using this one.
    Text(String),
    /// An array, in order.
    Array(Vec<CanonicalJson>),
    /// An object, keys sorted.
    Object(BTreeMap<String, CanonicalJson>),
}

impl CanonicalJson {
    /// Deeper nesting than this is not read.
    pub const MAX_DEPTH: usize = parse::MAX_DEPTH;

    /// The value of the JSON text `text`, or `None` when it is not JSON, nests deeper than
    /// [`MAX_DEPTH`](Self::MAX_DEPTH), has an exponent beyond 64 bits, or gives an object's
    /// key twice.
    pub fn parse(text: &[u8]) -> Option<CanonicalJson> {
        parse::parse(text)
    }
}

impl Serialize for CanonicalJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            CanonicalJson::Null => serializer.serialize_unit(),
            CanonicalJson::Bool(flag) => serializer.serialize_bool(*flag),
            CanonicalJson::Number(number) => number.serialize(serializer),
            CanonicalJson::Text(text) => serializer.serialize_str(text),
            CanonicalJson::Array(items) => serializer.collect_seq(items),
            CanonicalJson::Object(members) => serializer.collect_map(members),
        }
    }
}
