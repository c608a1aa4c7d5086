//! What an operator sees of one record.

use std::fmt;

use crate::{
    key::Key,
    store::{Outcome, Record, Timestamp},
};

/// A record as an operator sees it: [`Idempotency::inspect`](crate::Idempotency::inspect)'s
/// answer, and what the `idem` command prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inspection {
    key: Key,
    record: Record,
    state: RecordState,
    stored_bytes: usize,
}

impl Inspection {
    /// `record`, found under `key`, as of `now`.
    pub fn new(key: Key, record: Record, now: Timestamp) -> Self {
        let state = RecordState::of(&record, now);
        let stored_bytes = stored_bytes(&record);
        Inspection {
            key,
            record,
            state,
            stored_bytes,
        }
    }

    /// The key the record is stored under.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// The record itself: owner, attempt, fencing token, lease or expiry, steps, outcome.
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// Where the record stands at the time it was read.
    pub fn state(&self) -> RecordState {
        self.state
    }

    /// The bytes of the stored outcome and recorded step values (sealed, if sealing is on):
    /// what the record weighs beyond its fixed fields.
    pub fn stored_bytes(&self) -> usize {
        self.stored_bytes
    }

    /// The function's name, from the key (`None` for a key stored as its digest).
    pub fn function(&self) -> Option<&str> {
        self.key.function()
    }
}

fn stored_bytes(record: &Record) -> usize {
    match record {
        Record::InProgress(in_progress) => in_progress
            .steps()
            .iter()
            .map(|(name, value)| name.len() + value.len())
            .sum(),
        Record::Completed(completed) => completed.outcome().body().len(),
    }
}

/// Where a record stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecordState {
    /// A call holds the key and its lease is live: duplicates are told "in progress".
    Running,
    /// The owner's lease passed within [`LEASE_GRACE`](crate::store::LEASE_GRACE), or longer ago
    /// while recorded steps still hold the key: the same call may take the key over, another
    /// one is refused.
    LeasePassed,
    /// The owner released the key after recording steps: only the same call may use it, and
    /// it resumes after them.
    Released,
    /// The lease passed more than [`LEASE_GRACE`](crate::store::LEASE_GRACE) ago: any call may take
    /// the key over, and stores may delete the record.
    Abandoned,
    /// The function returned `Ok`, stored for replay.
    Completed,
    /// The function returned an `Err` that was stored for replay.
    StoredError,
    /// The call was recorded as aborted ([`OnAbort::Fail`](crate::OnAbort::Fail)).
    Aborted,
    /// A completed record past its expiry: the key is free.
    Expired,
}

impl RecordState {
    /// `record`'s state at `now`.
    pub fn of(record: &Record, now: Timestamp) -> Self {
        match record {
            Record::InProgress(held) if held.is_abandoned(now) => RecordState::Abandoned,
            Record::InProgress(held) if held.is_released() => RecordState::Released,
            Record::InProgress(held) if now < held.lease_until() => RecordState::Running,
            Record::InProgress(_) => RecordState::LeasePassed,
            Record::Completed(completed) if now >= completed.expires_at() => RecordState::Expired,
            Record::Completed(completed) => match completed.outcome() {
                Outcome::Ok(_) => RecordState::Completed,
                Outcome::Err(_) => RecordState::StoredError,
                Outcome::Aborted => RecordState::Aborted,
            },
        }
    }

    /// Whether the record is in progress (of any kind: running, lease passed, released or
    /// abandoned).
    pub fn is_in_progress(self) -> bool {
        matches!(
            self,
            RecordState::Running
                | RecordState::LeasePassed
                | RecordState::Released
                | RecordState::Abandoned
        )
    }

    /// The state's name, in kebab case: `running`, `lease-passed`, `released`, `abandoned`,
    /// `completed`, `stored-error`, `aborted`, `expired`.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordState::Running => "running",
            RecordState::LeasePassed => "lease-passed",
            RecordState::Released => "released",
            RecordState::Abandoned => "abandoned",
            RecordState::Completed => "completed",
            RecordState::StoredError => "stored-error",
            RecordState::Aborted => "aborted",
            RecordState::Expired => "expired",
        }
    }
}

impl fmt::Display for RecordState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
