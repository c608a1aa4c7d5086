//! Replays: the completed record a call finds before it claims anything (in the replay cache,
//! then by the store's in-process lookup), and a stored outcome decoded into the call's answer.

use std::sync::Arc;

use crate::call::codec::OutcomeCodec;
use crate::call::policy::ErrorPolicy;
use crate::engine::Engine;
use crate::telemetry::{CallOutcome, CallTelemetry};
use crate::{
    call::{arguments::Resolved, Answered, Call},
    error::Error,
    fingerprint::Fingerprint,
    store::{Completed, Lookup, Outcome, Probe, Timestamp},
    TARGET,
};

/// A completed record to replay: as the store answered it, or shared with the replay cache.
pub(super) enum Replay {
    Read(Completed),
    Shared(Arc<Completed>),
}

impl Replay {
    pub(super) fn outcome(&self) -> &Outcome {
        match self {
            Replay::Read(completed) => completed.outcome(),
            Replay::Shared(completed) => completed.outcome(),
        }
    }
}

impl Engine {
    /// `call`'s answer when its completed record is found before anything is claimed: in the
    /// replay cache, or by the store's lookup, at `now`. No quota is asked, no owner token
    /// made, no claim built. `None` when neither holds it: the call goes on to reserve, and
    /// the reservation answers a replay the lookup missed.
    pub(super) fn replay_first<T, E, P, C>(
        &self,
        call: &Call,
        now: Timestamp,
        policy: &P,
        codec: &C,
        telemetry: &mut CallTelemetry,
    ) -> Option<Result<Answered<T>, E>>
    where
        E: From<Error>,
        P: ErrorPolicy<E>,
        C: OutcomeCodec<T>,
    {
        match self.found_first(call, now, codec, telemetry) {
            Ok(Some(found)) => Some(replay(policy, codec, call, found.outcome(), telemetry)),
            Ok(None) => None,
            Err(error) => Some(Err(telemetry.failed(error).into())),
        }
    }

    fn found_first<T, C: OutcomeCodec<T>>(
        &self,
        call: &Call,
        now: Timestamp,
        codec: &C,
        telemetry: &CallTelemetry,
    ) -> Result<Option<Replay>, Error> {
        if let Some(cached) = self.cached(call, now, codec, telemetry)? {
            return Ok(Some(Replay::Shared(cached)));
        }
        let probe = Probe::new(now).with_max_outcome(call.max_outcome);
        // Through the timed store whoever listens: a lookup never waits, so timing it costs no
        // boxed future, and it asks the recorder about its own histogram, which spares a
        // replay the question `store_for` asks.
        let found = self
            .store
            .lookup(&call.key, &probe)
            .map_err(|e| e.into_error(call.key.as_str()))?;
        match found {
            Lookup::Completed(completed) => {
                check_arguments(call, codec, &completed, Found::Stored)?;
                Ok(Some(self.replayed_record(call, completed, now)))
            }
            Lookup::Miss => Ok(None),
        }
    }

    /// The completed record of `call`'s key in the replay cache at `now`, checked against its
    /// arguments.
    fn cached<T, C: OutcomeCodec<T>>(
        &self,
        call: &Call,
        now: Timestamp,
        codec: &C,
        telemetry: &CallTelemetry,
    ) -> Result<Option<Arc<Completed>>, Error> {
        let Some(cache) = &self.replay_cache else {
            return Ok(None);
        };
        let cached = cache.get(&self.cache_key(&call.key), now);
        telemetry.replay_cache(cached.is_some());
        let Some(completed) = cached else {
            return Ok(None);
        };
        check_arguments(call, codec, &completed, Found::Cached)?;
        tracing::debug!(target: TARGET, key = call.key.as_str(), "replayed: cached outcome returned");
        Ok(Some(completed))
    }

    /// `completed`, the record of `call`'s arguments that the store answered at `now`, to
    /// replay: kept in the replay cache too, when the handle has one.
    pub(super) fn replayed_record(
        &self,
        call: &Call,
        completed: Completed,
        now: Timestamp,
    ) -> Replay {
        tracing::debug!(target: TARGET, key = call.key.as_str(), "replayed: stored outcome returned");
        if self.replay_cache.is_none() {
            return Replay::Read(completed);
        }
        let shared = Arc::new(completed);
        self.cache(call, shared.clone(), now);
        Replay::Shared(shared)
    }

    /// Caches `completed` as `call`'s record at `now`, if the handle has a replay cache.
    pub(super) fn cache(&self, call: &Call, completed: Arc<Completed>, now: Timestamp) {
        if let Some(cache) = &self.replay_cache {
            // Under the stored key, which `forget` finds from a key in clear or its digest.
            // Evicting is worth it only for a record that costs a round trip to read again.
            let evict = !self.view.looks_up();
            cache.insert(&self.cache_key(&call.key), completed, now, evict);
        }
    }
}

/// Where a completed record checked before anything is claimed was found.
#[derive(Clone, Copy)]
enum Found {
    Cached,
    Stored,
}

/// Refuses `completed`, found under `call`'s key before anything is claimed, unless it is a
/// record of `call`'s arguments. A deferred call whose request digest is the one the record's
/// outcome carries (written by the call that completed this very key) sent the same request:
/// its fingerprint, which equal requests share, is not computed. Any other computes it (once:
/// the call ends here either way) and compares it with the record's.
fn check_arguments<T, C: OutcomeCodec<T>>(
    call: &Call,
    codec: &C,
    completed: &Completed,
    found: Found,
) -> Result<(), Error> {
    if let (Some(request), Outcome::Ok(outcome)) = (call.request_digest(), completed.outcome()) {
        if codec.request_digest(outcome).as_ref() == Some(request) {
            return Ok(());
        }
    }
    let fingerprint = call.arguments.canonical()?;
    if completed.fingerprint() == &fingerprint {
        return Ok(());
    }
    Err(mismatch(call, found))
}

/// Refuses a record of other arguments than `call`'s (`found` is its fingerprint).
pub(super) fn check_fingerprint(call: &Resolved, found: &Fingerprint) -> Result<(), Error> {
    if found == &call.fingerprint {
        return Ok(());
    }
    Err(mismatch(call, Found::Stored))
}

/// The refusal of `call`, whose key holds a record of other arguments, found as `found` says.
fn mismatch(call: &Call, found: Found) -> Error {
    let key = call.key.as_str();
    match found {
        Found::Cached => {
            tracing::warn!(target: TARGET, key, "mismatch: key reused with other arguments (cached record)")
        }
        Found::Stored => {
            tracing::warn!(target: TARGET, key, "mismatch: key reused with other arguments")
        }
    }
    Error::Mismatch {
        key: key.to_owned(),
    }
}

/// `outcome`, replayed as `call`'s answer (its value decoded by `codec`), counted as a replay
/// unless it fails to decode.
pub(super) fn replay<T, E, P, C>(
    policy: &P,
    codec: &C,
    call: &Call,
    outcome: &Outcome,
    telemetry: &mut CallTelemetry,
) -> Result<Answered<T>, E>
where
    E: From<Error>,
    P: ErrorPolicy<E>,
    C: OutcomeCodec<T>,
{
    match replayed(policy, codec, call, outcome) {
        Ok(executed) => {
            telemetry.ended(CallOutcome::Replayed);
            Ok(executed)
        }
        Err(Replayed::Stored(error)) => {
            telemetry.ended(CallOutcome::Replayed);
            Err(error)
        }
        Err(Replayed::Failed(error)) => Err(telemetry.failed(error).into()),
    }
}

/// Why a replay answers with an error: the stored one, or idem's own.
enum Replayed<E> {
    Stored(E),
    Failed(Error),
}

impl<E> From<Error> for Replayed<E> {
    fn from(error: Error) -> Self {
        Replayed::Failed(error)
    }
}

fn replayed<T, E, P, C>(
    policy: &P,
    codec: &C,
    call: &Call,
    outcome: &Outcome,
) -> Result<Answered<T>, Replayed<E>>
where
    E: From<Error>,
    P: ErrorPolicy<E>,
    C: OutcomeCodec<T>,
{
    if let Outcome::Ok(body) | Outcome::Err(body) = outcome {
        if crate::store::is_sealed(body) {
            // A handle with a keyring opens values on the way out of the store.
            return Err(Error::CorruptRecord {
                key: call.key.as_str().to_owned(),
                reason: "the stored outcome is sealed, and this handle has no keyring to open it"
                    .to_owned(),
            }
            .into());
        }
        // The store checked already where it follows the contract; a store of one's own may
        // not.
        if let Err(refused) = crate::store::check_outcome_len(body.len() as u64, call.max_outcome) {
            let key = call.key.as_str();
            tracing::error!(target: TARGET, key, bytes = body.len(), max = call.max_outcome, "the stored outcome is over the size this call replays");
            return Err(refused.into_error(key).into());
        }
    }
    match outcome {
        // The stored bytes are shared with the codec, not copied.
        Outcome::Ok(body) => codec
            .decode(body.clone())
            .map(|value| Answered {
                value,
                replayed: true,
            })
            .map_err(|e| Error::codec(e).into()),
        Outcome::Err(body) => Err(match policy.decode(body) {
            Ok(stored) => Replayed::Stored(stored),
            Err(error) => Replayed::Failed(error),
        }),
        Outcome::Aborted => Err(Error::Aborted {
            key: call.key.as_str().to_owned(),
        }
        .into()),
    }
}
