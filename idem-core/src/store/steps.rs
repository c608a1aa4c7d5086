//! The steps a call recorded, as its in-progress record keeps them.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::Timestamp;

/// The finished steps of a call: each one's serialised `Ok` value (JSON), by name, and until
/// when they hold the key. The values are shared bytes ([`Bytes`]): a clone of the steps, as a
/// duplicate's or a takeover's read of the record makes, shares them.
///
/// A step's side effect happened, so its record must outlive the lease: an in-progress record
/// with steps is not abandoned before [`kept_until`](Steps::kept_until) (a TTL after its latest
/// step), and until then only a call with the same fingerprint may take it over, resuming
/// after them. See [`step`](crate::step).
///
/// ```
/// use idem_core::store::{Steps, Timestamp};
/// let steps = Steps::new()
///     .with_step("charge", br#""ch_1""#.to_vec())
///     .with_kept_until(Timestamp::from_millis(1_700_000_000_000));
/// assert_eq!(steps.get("charge"), Some(&br#""ch_1""#[..]));
/// assert_eq!(steps.len(), 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Steps {
    values: BTreeMap<String, Bytes>,
    kept_until: Timestamp,
}

impl Steps {
    /// No steps.
    pub fn new() -> Self {
        Self::default()
    }

    /// These steps and `name`, whose value is `value` (replacing an earlier value of `name`).
    /// A `Vec<u8>` or a [`Bytes`] becomes the value without a copy.
    pub fn with_step(mut self, name: impl Into<String>, value: impl Into<Bytes>) -> Self {
        self.insert(name, value);
        self
    }

    /// These steps, kept until `kept_until`.
    pub fn with_kept_until(mut self, kept_until: Timestamp) -> Self {
        self.kept_until = kept_until;
        self
    }

    /// Records `name` with `value`, replacing an earlier value of `name`. A `Vec<u8>` or a
    /// [`Bytes`] becomes the value without a copy.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<Bytes>) {
        self.values.insert(name.into(), value.into());
    }

    /// Keeps the steps until `until` at least.
    pub fn keep_until(&mut self, until: Timestamp) {
        self.kept_until = self.kept_until.max(until);
    }

    /// The serialised value of step `name`, if it was recorded.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.values.get(name).map(|value| &value[..])
    }

    /// The serialised value of step `name` as the shared bytes the steps hold, for a caller
    /// that keeps it (a clone of them is a reference, not a copy).
    pub fn bytes(&self, name: &str) -> Option<&Bytes> {
        self.values.get(name)
    }

    /// The recorded steps, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.values
            .iter()
            .map(|(name, value)| (name.as_str(), &value[..]))
    }

    /// How many steps are recorded.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no step is recorded.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Until when the steps hold the key: the expiry of the latest step's record. The epoch
    /// when there are none.
    pub fn kept_until(&self) -> Timestamp {
        self.kept_until
    }

    /// Whether the steps hold the key at `now`: some are recorded and they are not expired.
    pub fn hold_key(&self, now: Timestamp) -> bool {
        !self.is_empty() && now < self.kept_until
    }
}
