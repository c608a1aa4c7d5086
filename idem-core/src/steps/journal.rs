//! What a running call knows of its steps: those recorded, those used, and whether one failed
//! to record.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;

use crate::lease::retry::{FencedWrite, Patience};
use crate::lease::Lease;
use crate::{
    clock::Clock,
    error::Error,
    fingerprint::Fingerprint,
    key::Key,
    store::{OwnerToken, Record, Steps, Store},
    TARGET,
};

/// How often a step write is tried before the step fails: the body waits for it.
const STEP_WRITE_ATTEMPTS: u32 = 3;

/// The steps of the call being run, shared by the engine and the body's
/// [`CallContext`](crate::CallContext).
pub(crate) struct Journal {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    key: Key,
    owner: OwnerToken,
    fingerprint: Fingerprint,
    ttl: Duration,
    lease: Arc<Lease>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The steps the record holds: found at reservation, or recorded since.
    recorded: Steps,
    /// The names of the steps this run replayed, recorded or is running.
    used: HashSet<String>,
    /// How many steps ran whose value is not recorded: being written, or failed to be.
    unrecorded: usize,
}

/// What a journal needs: the owner's store, clock, key, TTL and lease.
pub(crate) struct Owner {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) key: Key,
    pub(crate) owner: OwnerToken,
    pub(crate) fingerprint: Fingerprint,
    pub(crate) ttl: Duration,
    pub(crate) lease: Arc<Lease>,
}

impl Journal {
    /// The journal of `owner`'s call, whose record holds `recorded`.
    pub(crate) fn new(owner: Owner, recorded: Steps) -> Self {
        Journal {
            store: owner.store,
            clock: owner.clock,
            key: owner.key,
            owner: owner.owner,
            fingerprint: owner.fingerprint,
            ttl: owner.ttl,
            lease: owner.lease,
            state: Mutex::new(State {
                recorded,
                ..State::default()
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock, so a poisoned state is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts step `name`: its recorded value if an earlier attempt finished it, or the
    /// [`Running`] step that must run. A name recorded or running in this run is
    /// [`Error::DuplicateStep`]; a step whose future failed or was dropped frees its name.
    pub(crate) fn begin(&self, name: &str) -> Result<Begun<'_>, Error> {
        if let Some(reason) = invalid_name(name) {
            return Err(Error::InvalidStepName {
                key: self.key.as_str().to_owned(),
                step: name.to_owned(),
                reason,
            });
        }
        let mut state = self.state();
        if !state.used.insert(name.to_owned()) {
            return Err(Error::DuplicateStep {
                key: self.key.as_str().to_owned(),
                step: name.to_owned(),
            });
        }
        Ok(match state.recorded.bytes(name) {
            Some(recorded) => Begun::Recorded(recorded.clone()),
            None => Begun::Run(Running {
                journal: self,
                name: name.to_owned(),
                ran: false,
            }),
        })
    }

    /// Records step `name`'s value (counted by [`Running::ran`]), retrying while the
    /// lease holds. On failure the step's effect happened without a record: the error is
    /// [`Error::NotRecorded`] and the engine holds the key instead of releasing it.
    pub(crate) async fn record(&self, name: &str, value: Vec<u8>) -> Result<(), Error> {
        let key = self.key.as_str();
        let kept_until = self.clock.now() + self.ttl;
        let what = format!("step `{name}`");
        let write = FencedWrite {
            store: &*self.store,
            clock: &*self.clock,
            key: &self.key,
            owner: &self.owner,
            fingerprint: &self.fingerprint,
            lease: &self.lease,
            what: &what,
            patience: Patience::Attempts(STEP_WRITE_ATTEMPTS),
        };
        let landed = |record: &Record| {
            matches!(record, Record::InProgress(held)
                if held.owner() == &self.owner && held.steps().get(name) == Some(&value[..]))
        };
        let written = write
            .run(
                || {
                    self.store
                        .record_step(&self.key, &self.owner, name, &value, kept_until)
                },
                landed,
            )
            .await;
        let mut state = self.state();
        match written {
            Ok(()) => {
                tracing::debug!(target: TARGET, key, step = name, "step recorded");
                state.unrecorded -= 1;
                state.recorded.insert(name, value);
                state.recorded.keep_until(kept_until);
                Ok(())
            }
            Err(error) => {
                tracing::error!(target: TARGET, key, step = name, %error, "the step ran but its value was not recorded; the key stays reserved until its lease passes");
                Err(error.into_error(key).after_run(key))
            }
        }
    }

    /// Whether a step ran but its value is not recorded: releasing the key would let a retry
    /// run it again.
    pub(crate) fn has_unrecorded(&self) -> bool {
        self.state().unrecorded > 0
    }
}

/// What [`Journal::begin`] found.
pub(crate) enum Begun<'a> {
    /// The value an earlier attempt recorded, shared with the record read.
    Recorded(Bytes),
    /// The step must run.
    Run(Running<'a>),
}

/// A step whose future runs. Dropped before [`ran`](Running::ran) (its future failed, or the
/// body dropped it), it frees its name, so that the body may try the step again.
pub(crate) struct Running<'a> {
    journal: &'a Journal,
    name: String,
    ran: bool,
}

impl Running<'_> {
    /// Counts the step as run, from the moment its future returned `Ok` until
    /// [`record`](Journal::record) lands its value: a call cancelled or failing in between
    /// must hold its key, not release it. The name stays taken for this run.
    pub(crate) fn ran(mut self) {
        self.ran = true;
        self.journal.state().unrecorded += 1;
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if !self.ran {
            self.journal.state().used.remove(&self.name);
        }
    }
}

/// The longest step name, in bytes. A name must also be non-empty and hold no control
/// character, so that every store can keep it as a field or attribute name.
pub const MAX_STEP_NAME_LEN: usize = 128;

/// Why no store could keep `name`, if so.
fn invalid_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it is empty")
    } else if name.len() > MAX_STEP_NAME_LEN {
        Some("it is longer than 128 bytes")
    } else if name.chars().any(char::is_control) {
        Some("it holds a control character")
    } else {
        None
    }
}

impl fmt::Debug for Journal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state();
        f.debug_struct("Journal")
            .field("key", &self.key)
            .field("recorded", &state.recorded.len())
            .field("used", &state.used.len())
            .finish_non_exhaustive()
    }
}
