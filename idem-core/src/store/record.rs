//! The records a store keeps under a key.

use std::fmt;
use std::time::Duration;

use crate::{
    fingerprint::Fingerprint,
    store::{Outcome, Steps, Timestamp},
};

/// How long an in-progress record whose lease passed still stands. Within the grace only a
/// caller with the same fingerprint may take the key over (another gets
/// [`Error::Mismatch`](crate::Error::Mismatch)), and the stale owner may still finish if no one
/// did; after it the reservation counts as abandoned, any caller may take the key over, and
/// stores may delete the record.
pub const LEASE_GRACE: Duration = Duration::from_secs(60);

/// [`LEASE_GRACE`] in milliseconds, for stores that compute in numbers.
pub const LEASE_GRACE_MS: u64 = LEASE_GRACE.as_millis() as u64;

/// The token that identifies the caller holding an in-progress record. Complete, release and
/// renew succeed only for the current owner (fencing).
#[derive(Clone)]
pub struct OwnerToken(Token);

/// A token's text: one this process generated is kept inline (a call makes one, and its
/// clones, without an allocation), one read back from a store as it came.
#[derive(Clone)]
enum Token {
    Generated([u8; 32]),
    Read(String),
}

impl OwnerToken {
    /// A new random token.
    pub fn generate() -> Self {
        let mut text = [0; 32];
        uuid::Uuid::new_v4().simple().encode_lower(&mut text);
        OwnerToken(Token::Generated(text))
    }

    /// The token's text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // Lowercase hexadecimal digits, written by `generate`.
            Token::Generated(text) => std::str::from_utf8(text).unwrap_or_default(),
            Token::Read(text) => text,
        }
    }
}

impl From<String> for OwnerToken {
    /// Rebuilds a token read back from a store.
    fn from(token: String) -> Self {
        OwnerToken(Token::Read(token))
    }
}

impl PartialEq for OwnerToken {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for OwnerToken {}

impl std::hash::Hash for OwnerToken {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Debug for OwnerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OwnerToken({})", self.as_str())
    }
}

/// A record under a key.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Record {
    /// A caller has reserved the key and is running the function.
    InProgress(InProgress),
    /// The function finished and its outcome is stored for replay.
    Completed(Completed),
}

impl Record {
    /// The fingerprint of the call that created the record.
    pub fn fingerprint(&self) -> &Fingerprint {
        match self {
            Record::InProgress(p) => p.fingerprint(),
            Record::Completed(c) => c.fingerprint(),
        }
    }

    /// When the record stops counting: the lease deadline of an in-progress record, the expiry
    /// of a completed one. A record is live while `now < live_until()`.
    pub fn live_until(&self) -> Timestamp {
        match self {
            Record::InProgress(p) => p.lease_until(),
            Record::Completed(c) => c.expires_at(),
        }
    }

    /// Whether the record still counts at `now`.
    pub fn is_live(&self, now: Timestamp) -> bool {
        now < self.live_until()
    }
}

/// A reservation: who runs the function, and until when the reservation holds without renewal.
///
/// ```
/// use std::time::Duration;
/// use idem_core::{Fingerprint, store::{InProgress, OwnerToken, Timestamp}};
/// let now = Timestamp::from_millis(1_700_000_000_000);
/// let record = InProgress::new(OwnerToken::generate(), Fingerprint::empty(), now + Duration::from_secs(30))
///     .with_fencing_token(7)
///     .with_attempt(2);
/// assert_eq!(record.attempt(), 2);
/// assert!(!record.is_abandoned(now));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InProgress {
    owner: OwnerToken,
    fingerprint: Fingerprint,
    lease_until: Timestamp,
    fencing_token: u64,
    attempt: u32,
    steps: Steps,
}

impl InProgress {
    /// `owner`'s reservation for a call fingerprinted `fingerprint`, leased until `lease_until`:
    /// attempt 1, fencing token 0 until [`with_fencing_token`](InProgress::with_fencing_token)
    /// says otherwise.
    pub fn new(owner: OwnerToken, fingerprint: Fingerprint, lease_until: Timestamp) -> Self {
        InProgress {
            owner,
            fingerprint,
            lease_until,
            fencing_token: 0,
            attempt: 1,
            steps: Steps::new(),
        }
    }

    /// The same record with `fencing_token`.
    pub fn with_fencing_token(mut self, fencing_token: u64) -> Self {
        self.fencing_token = fencing_token;
        self
    }

    /// The same record counted as attempt `attempt`.
    pub fn with_attempt(mut self, attempt: u32) -> Self {
        self.attempt = attempt;
        self
    }

    /// The same record leased until `lease_until`.
    pub fn with_lease_until(mut self, lease_until: Timestamp) -> Self {
        self.lease_until = lease_until;
        self
    }

    /// The same record holding `steps`.
    pub fn with_steps(mut self, steps: Steps) -> Self {
        self.steps = steps;
        self
    }

    /// The steps recorded so far, for a store to change in place.
    pub fn steps_mut(&mut self) -> &mut Steps {
        &mut self.steps
    }

    /// Moves the lease deadline, as a renewal does.
    pub fn set_lease_until(&mut self, lease_until: Timestamp) {
        self.lease_until = lease_until;
    }

    /// The caller running the function.
    pub fn owner(&self) -> &OwnerToken {
        &self.owner
    }

    /// The fingerprint of that caller's arguments.
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// After this instant another caller with the same fingerprint may take the key over.
    pub fn lease_until(&self) -> Timestamp {
        self.lease_until
    }

    /// Grows with every reservation of the key: on a takeover the store writes the larger of
    /// the claim's token and the previous one plus one
    /// ([`taking_over`](InProgress::taking_over)); a claim proposes one derived from its clock
    /// (a thousand per millisecond), so a reservation of a key that was released or expired
    /// gets a larger token too while the callers' clocks agree. Stays below 2^53, so scripts
    /// that count in doubles (Redis's Lua) hold it exactly.
    pub fn fencing_token(&self) -> u64 {
        self.fencing_token
    }

    /// 1 for the first reservation of this call, one more for each takeover by the same
    /// call (same fingerprint).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The steps the call recorded so far (see [`step`](crate::step)).
    pub fn steps(&self) -> &Steps {
        &self.steps
    }

    /// Whether the reservation is abandoned at `now`: its lease passed more than
    /// [`LEASE_GRACE`] ago, and it holds no steps that are still kept
    /// ([`Steps::hold_key`]).
    pub fn is_abandoned(&self, now: Timestamp) -> bool {
        self.lease_until + LEASE_GRACE <= now && !self.steps.hold_key(now)
    }

    /// Whether the record holds steps and was released: the call ended in an error after
    /// some of its steps, and the key waits for the same call to resume. Its lease is the
    /// epoch.
    pub fn is_released(&self) -> bool {
        self.lease_until == Timestamp::EPOCH && !self.steps.is_empty()
    }

    /// The record [`release`](crate::store::Store::release) leaves when it holds steps: the same
    /// record with its lease ended (set to the epoch), so that a call with the same
    /// fingerprint may take it over at once and resume, and any other call gets
    /// [`Error::Mismatch`](crate::Error::Mismatch) until the steps expire.
    pub fn released(mut self) -> Self {
        self.lease_until = Timestamp::EPOCH;
        self
    }

    /// Whether this record and `other` are the same call: they have the same fingerprint. A
    /// takeover by the same call keeps the steps ([`taking_over`](InProgress::taking_over)).
    pub fn is_same_call(&self, other: &InProgress) -> bool {
        self.fingerprint == other.fingerprint
    }

    /// The record this claim's record becomes when it takes `previous` over: the same record
    /// with the attempt counted on from `previous` and its steps when both are the same call
    /// (same fingerprint), and a fencing token above `previous`'s. A takeover by another
    /// call starts with no steps.
    ///
    /// Every store writes exactly this on a takeover.
    pub fn taking_over(&self, previous: &InProgress) -> InProgress {
        let same_call = self.is_same_call(previous);
        let (attempt, steps) = if same_call {
            (previous.attempt.saturating_add(1), previous.steps.clone())
        } else {
            (1, Steps::new())
        };
        InProgress {
            owner: self.owner.clone(),
            fingerprint: self.fingerprint,
            lease_until: self.lease_until,
            fencing_token: self
                .fencing_token
                .max(previous.fencing_token.saturating_add(1)),
            attempt,
            steps,
        }
    }
}

/// A finished call's stored outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Completed {
    fingerprint: Fingerprint,
    outcome: Outcome,
    expires_at: Timestamp,
}

impl Completed {
    /// The outcome of a call fingerprinted `fingerprint`, replayed until `expires_at`.
    pub fn new(fingerprint: Fingerprint, outcome: Outcome, expires_at: Timestamp) -> Self {
        Completed {
            fingerprint,
            outcome,
            expires_at,
        }
    }

    /// The fingerprint of the call's arguments.
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// What the function returned, serialised.
    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }

    /// Until when the outcome is replayed; after it the key counts as new.
    pub fn expires_at(&self) -> Timestamp {
        self.expires_at
    }

    /// The outcome, taken out of the record.
    pub fn into_outcome(self) -> Outcome {
        self.outcome
    }
}

/// What a caller asks of [`Store::reserve`](crate::store::Store::reserve).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Claim {
    record: InProgress,
    now: Timestamp,
    max_outcome: Option<usize>,
}

impl Claim {
    /// A claim to write `record` if the key is free at `now`.
    pub fn new(record: InProgress, now: Timestamp) -> Self {
        Claim {
            record,
            now,
            max_outcome: None,
        }
    }

    /// The same claim from a call that replays no outcome longer than `bytes` (see
    /// [`Call::with_max_outcome`](crate::Call::with_max_outcome)): a store that finds a
    /// completed record with a longer one refuses it before it reads it
    /// ([`check_outcome_len`](crate::store::check_outcome_len)).
    pub fn with_max_outcome(mut self, bytes: Option<usize>) -> Self {
        self.max_outcome = bytes;
        self
    }

    /// The record to write if the key is free.
    pub fn record(&self) -> &InProgress {
        &self.record
    }

    /// The current time, for judging expiry and leases.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The longest outcome the caller replays, if it set one: a completed record found with
    /// a longer one is refused as [`StoreError::Corrupt`](crate::StoreError::Corrupt) before
    /// its value is read, by
    /// [`check_outcome_len`](crate::store::check_outcome_len) or, where only the whole
    /// record can be measured, [`check_record_len`](crate::store::check_record_len). `None`
    /// (the default) takes any length.
    pub fn max_outcome(&self) -> Option<usize> {
        self.max_outcome
    }
}

/// The answer of [`Store::reserve`](crate::store::Store::reserve).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reservation {
    /// The key was free (absent or expired); the claim's record is now stored (or, for a
    /// retried request, was stored by its first attempt): it is returned as stored.
    Reserved(InProgress),
    /// The key held an in-progress record whose lease had passed (with the claim's
    /// fingerprint, or abandoned); the claim replaced it.
    TookOver {
        /// The owner whose lease passed.
        previous: OwnerToken,
        /// The record now stored: the claim's record
        /// [`taking_over`](InProgress::taking_over) the previous one.
        record: InProgress,
    },
    /// The key holds a live record (or an in-progress record with another fingerprint, whose
    /// lease may have passed); nothing was written.
    Existing(Record),
}

#[cfg(test)]
mod owner_token_tests {
    use std::collections::HashSet;

    use super::OwnerToken;

    #[test]
    fn a_generated_token_is_the_token_its_text_reads_back_as() {
        let generated = OwnerToken::generate();
        let text = generated.as_str().to_owned();
        assert_eq!(text.len(), 32);
        assert!(text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        let read = OwnerToken::from(text);
        assert_eq!(generated, read);
        assert_eq!(format!("{generated:?}"), format!("{read:?}"));
        let tokens: HashSet<OwnerToken> = [generated, read].into_iter().collect();
        assert_eq!(tokens.len(), 1, "equal tokens hash alike");
    }

    #[test]
    fn generated_tokens_differ() {
        assert_ne!(OwnerToken::generate(), OwnerToken::generate());
    }
}
