//! Fingerprints: SHA-256 over the canonical encoding of a call's arguments.

pub(crate) mod canonical;
#[cfg(test)]
mod every_kind;
#[cfg(test)]
mod properties;

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::Error;

/// The SHA-256 fingerprint of a call's fingerprinted arguments.
///
/// Two calls fingerprint alike exactly when their arguments encode alike canonically: map entry
/// order does not matter (a `HashMap` argument fingerprints the same every time), type names do
/// not matter, sequence order does. Numbers count by value, by [the rule of
/// `idem_core::json`](crate::json): `100u8`, `100i64`, `100.0f64` and a JSON `1e2` are one.
/// `HashSet` serialises as a sequence in its iteration order, so fingerprint sets as
/// `BTreeSet` or sorted `Vec`s.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of a call with no fingerprinted arguments.
    pub fn empty() -> Self {
        Fingerprinter::new().finish()
    }

    /// The fingerprint of one value.
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<Self, Error> {
        let mut fingerprinter = Fingerprinter::new();
        fingerprinter.add(value)?;
        Ok(fingerprinter.finish())
    }

    /// The raw digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Builds a fingerprint from a raw digest, as read back from a store.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Fingerprint(bytes)
    }

    /// Lower-case hex, the form stores keep.
    pub fn to_hex(&self) -> String {
        let mut hex = String::with_capacity(64);
        for byte in self.0 {
            hex.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
            hex.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
        }
        hex
    }
}

impl FromStr for Fingerprint {
    type Err = ParseFingerprintError;

    /// Parses the output of [`to_hex`](Fingerprint::to_hex): 64 hex digits.
    fn from_str(hex: &str) -> Result<Self, Self::Err> {
        let bytes = hex.as_bytes();
        if bytes.len() != 64 {
            return Err(ParseFingerprintError);
        }
        let mut digest = [0u8; 32];
        for (slot, pair) in digest.iter_mut().zip(bytes.chunks_exact(2)) {
            let digit = |c: u8| (c as char).to_digit(16).ok_or(ParseFingerprintError);
            *slot = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
        }
        Ok(Fingerprint(digest))
    }
}

/// Why a text is not a fingerprint: it is not 64 hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseFingerprintError;

impl fmt::Display for ParseFingerprintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a fingerprint is 64 hex digits")
    }
}

impl std::error::Error for ParseFingerprintError {}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({})", self.to_hex())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// Fingerprints a call's arguments one after another.
///
/// ```
/// use idem_core::Fingerprinter;
/// let mut fp = Fingerprinter::new();
/// fp.add(&"order-42")?;
/// fp.add(&1_000u64)?;
/// let fingerprint = fp.finish();
/// # Ok::<(), idem_core::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct Fingerprinter {
    encoded: Vec<u8>,
}

/// Bumped when the canonical encoding changes, so old records never match new fingerprints by
/// accident.
const ENCODING_VERSION: &[u8] = b"idem-fp-v3";

impl Fingerprinter {
    /// A fingerprinter with no arguments yet.
    pub fn new() -> Self {
        Fingerprinter {
            encoded: Vec::with_capacity(256),
        }
    }

    /// Adds the next argument. Fails only if the value's `Serialize` impl fails.
    pub fn add<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<&mut Self, Error> {
        canonical::encode(value, &mut self.encoded).map_err(Error::codec)?;
        Ok(self)
    }

    /// The fingerprint of the arguments added so far.
    pub fn finish(&self) -> Fingerprint {
        let mut hasher = Sha256::new();
        hasher.update(ENCODING_VERSION);
        hasher.update(&self.encoded);
        Fingerprint(hasher.finalize().into())
    }
}

#[cfg(test)]
mod tests;
