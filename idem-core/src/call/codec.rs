//! How a call's `Ok` value becomes the bytes of its stored outcome and back: JSON unless a
//! call runs with a codec of its own.

use bytes::Bytes;
use serde::{de::DeserializeOwned, Serialize};

use crate::{error::BoxError, fingerprint::Fingerprint};

/// Turns a call's `Ok` value into the bytes its record stores ([`Outcome::Ok`]), and those
/// bytes back into the value a replay answers with.
///
/// [`Idempotency::run`](crate::Idempotency::run), `run_with_policy` and the `#[idempotent]`
/// attribute store JSON ([`JsonCodec`]); [`Idempotency::run_with_codec`](crate::Idempotency::run_with_codec)
/// takes any codec, for a value that has a more compact or faster form of its own (an HTTP
/// response whose body is bytes, say).
///
/// The engine checks a stored outcome before it decodes it (a sealed value this handle cannot
/// open, an outcome over the call's size limit), and reports a codec's failure as it reports
/// JSON's: [`Error::Codec`](crate::Error::Codec) with the codec's error as its source. An
/// outcome that cannot be encoded leaves the call completed as having left no outcome, as a
/// value JSON cannot serialise does.
///
/// A codec reads what earlier versions of it stored as long as records of theirs may live:
/// the bytes are kept for the record's TTL.
///
/// A value may be any bytes but those that start as a sealed value does (`\0iS`): the engine
/// refuses such a value as it refuses one that cannot be encoded, since every replay would
/// take it for a sealed value.
///
/// [`Outcome::Ok`]: crate::store::Outcome::Ok
pub trait OutcomeCodec<T>: Send + Sync {
    /// The bytes to store for `value`.
    fn encode(&self, value: &T) -> Result<Bytes, BoxError>;

    /// The value stored as `outcome`: the record's bytes (opened, if sealed), shared with the
    /// record rather than copied, so a value may keep slices of them.
    fn decode(&self, outcome: Bytes) -> Result<T, BoxError>;

    /// The bytes to store for `value`, the answer of a [deferred](crate::Call::deferred) call
    /// made with the request digest `request` (as stored: keyed under the handle's digest
    /// secret, when it has one). A codec that can keep the digest in its bytes does, for
    /// [`request_digest`](OutcomeCodec::request_digest) to read back; by default,
    /// [`encode`](OutcomeCodec::encode)'s bytes, without it.
    fn encode_for(&self, value: &T, request: &Fingerprint) -> Result<Bytes, BoxError> {
        let _ = request;
        self.encode(value)
    }

    /// The request digest a stored `outcome` carries, as [`encode_for`](OutcomeCodec::encode_for)
    /// was given it; `None` when it carries none (by default, always). Read cheaply, without
    /// decoding the value: a replay asks it before anything else.
    ///
    /// What the engine does with it: it compares it only with the request digest of a call
    /// under the same stored key as the record, and only skips comparing fingerprints (and
    /// computing the call's) when the two are equal. A digest that differs, or none, makes
    /// the call compare fingerprints, as every call without a digest does. So a codec reads a
    /// digest only where its own form says one was written, never from bytes that merely could
    /// be one.
    fn request_digest(&self, outcome: &Bytes) -> Option<Fingerprint> {
        let _ = outcome;
        None
    }
}

/// The codec of every call that names none: the value as JSON, by serde_json.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsonCodec;

impl<T: Serialize + DeserializeOwned> OutcomeCodec<T> for JsonCodec {
    fn encode(&self, value: &T) -> Result<Bytes, BoxError> {
        let mut json = serde_json::to_vec(value)?;
        // The buffer grew by doubling, and the record keeps it, room and all, for its TTL
        // (in the memory store and the replay cache): trimmed once here, not per replay.
        if json.capacity() - json.len() > json.len() / 8 {
            json.shrink_to_fit();
        }
        Ok(json.into())
    }

    fn decode(&self, outcome: Bytes) -> Result<T, BoxError> {
        Ok(serde_json::from_slice(&outcome)?)
    }
}
