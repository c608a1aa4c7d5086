//! What a completed record answers: its outcome opened (when sealed and a keyring is given)
//! and decoded, by the formats' own code: idem-core's keyring, idem-http's stored response.

use idem_core::seal::{is_sealed, sealed_key_id, Keyring};
use idem_core::store::{Bytes, Outcome, Record};
use idem_core::Inspection;
use idem_http::RecordedResponse;

/// A record's outcome, as `get` shows it.
#[derive(Debug)]
pub(crate) enum Shown {
    /// The record holds no value: in progress, aborted.
    Nothing,
    /// Sealed, and no keyring was given to open it.
    Sealed {
        /// The id of the key it was sealed with, as stored beside it.
        key_id: Option<String>,
    },
    /// Sealed, and the keyring given does not open it.
    Unopened {
        /// The id of the key it was sealed with, as stored beside it.
        key_id: Option<String>,
        /// Why it did not open, in the keyring's words.
        reason: String,
    },
    /// The value (opened, if it was sealed), decoded.
    Value {
        /// The value's bytes, as the service stored them before sealing.
        bytes: Bytes,
        /// What they are.
        decoded: Decoded,
        /// Stored unsealed although a keyring was given: a service with sealing on refuses
        /// it (unless its ring accepts unsealed values).
        unsealed: bool,
    },
}

/// What an outcome's bytes are.
#[derive(Debug)]
pub(crate) enum Decoded {
    /// A response stored by idem-http's layer.
    Http(RecordedResponse),
    /// JSON: what `#[idempotent]` and the engine store (the `Ok` or `Err` value), as stored:
    /// kept as text, so that no number is rounded on its way to the screen.
    Json(Box<serde_json::value::RawValue>),
    /// Anything else.
    Bytes,
}

/// The outcome of `inspection`'s record, opened with `keyring` if it is sealed.
pub(crate) fn shown(inspection: &Inspection, keyring: Option<&Keyring>, scope: &str) -> Shown {
    let Record::Completed(completed) = inspection.record() else {
        return Shown::Nothing;
    };
    let stored = match completed.outcome() {
        Outcome::Ok(body) | Outcome::Err(body) => body,
        _ => return Shown::Nothing,
    };
    let key_id = || sealed_key_id(stored).map(str::to_owned);
    let sealed = is_sealed(stored);
    let bytes = match (sealed, keyring) {
        (false, _) => stored.clone(),
        (true, None) => return Shown::Sealed { key_id: key_id() },
        // Opened as the sealed store opens it: bound to the store's sealing scope (its prefix
        // or table), the key as stored (the one given, a digest under key digests), the
        // outcome's kind and the stored fingerprint.
        (true, Some(keyring)) => match keyring.open_outcome(scope, inspection.key(), completed) {
            Ok(opened) => opened.bytes().cloned().unwrap_or_default(),
            Err(unopened) => {
                return Shown::Unopened {
                    key_id: key_id(),
                    reason: unopened.to_string(),
                }
            }
        },
    };
    Shown::Value {
        decoded: decoded(&bytes),
        bytes,
        unsealed: !sealed && keyring.is_some(),
    }
}

impl Shown {
    /// The outcome's bytes as `--raw` writes them: opened, if sealed.
    pub(crate) fn raw(&self) -> Option<&[u8]> {
        match self {
            Shown::Value { bytes, .. } => Some(bytes),
            _ => None,
        }
    }
}

/// What `bytes` are: a stored HTTP response first (a binary frame, or the JSON form layers
/// stored before it, which is JSON too), then JSON.
fn decoded(bytes: &[u8]) -> Decoded {
    if let Ok(response) = RecordedResponse::decode(bytes) {
        return Decoded::Http(response);
    }
    match serde_json::from_slice(bytes) {
        Ok(value) => Decoded::Json(value),
        Err(_) => Decoded::Bytes,
    }
}
