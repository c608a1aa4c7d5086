//! `step`: a part of an idempotent body whose result is recorded, so that a retry after a crash
//! resumes after it instead of running it again.

use std::future::Future;

use serde::{de::DeserializeOwned, Serialize};

use crate::call::downstream;
use crate::steps::journal::Begun;
use crate::{call::context::context, error::Error};

/// Runs `future` as the step `name` of the current idempotent call, recording its `Ok` value
/// under the call's key before returning it; when an earlier attempt of the same call already
/// recorded `name`, returns that value without running `future`.
///
/// A body whose side effects come one after another (charge the card, then book the ledger)
/// can lose its process between them. Without steps, the retry that takes the key over after
/// the lease runs the whole body again and charges twice. With each effect in a step, the
/// retry replays the charge from the record and runs only what did not finish:
///
/// ```
/// # use idem_core::{Call, Fingerprint, Idempotency};
/// # use idem_conformance::ReferenceStore;
/// # async fn demo() -> Result<(), idem_core::Error> {
/// # let idem = Idempotency::new(ReferenceStore::new());
/// # async fn charge_card(_: u64) -> Result<String, idem_core::Error> { Ok("ch_1".into()) }
/// # async fn book_ledger(_: &str) -> Result<u64, idem_core::Error> { Ok(7) }
/// let key = idem.key("shop.checkout").part("order-42").finish()?;
/// let call = Call::new(key, Fingerprint::of(&("order-42", 1_000))?);
/// let receipt = idem
///     .run(call, async {
///         let charge = idem_core::step("charge", charge_card(1_000)).await?;
///         let entry = idem_core::step("ledger", book_ledger(&charge)).await?;
///         Ok::<_, idem_core::Error>((charge, entry))
///     })
///     .await?;
/// assert_eq!(receipt.value, ("ch_1".to_string(), 7));
/// # Ok(()) }
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(demo()).unwrap();
/// ```
///
/// - Recording is one write, fenced by the owner: a caller that lost its key to a takeover gets
///   [`Error::NotRecorded`] (caused by [`Error::LeaseLost`]) and nothing is recorded. A step
///   replayed from the record costs no round trip: the record came with the reservation.
/// - An `Err` from `future` is returned as it is and not recorded; the step runs again when
///   the body tries it again under the same name (a retry loop in the body), or on the next
///   attempt of the call.
/// - When the call ends in `Err` after recording a step, the key is not freed: only the same
///   call (same arguments) may use it again, and it resumes; another gets
///   [`Error::Mismatch`] until the TTL after the latest step passes. With no step recorded, an
///   `Err` releases the key as always.
/// - A step whose call's lease is known lost when it starts (another caller may have taken the
///   key over, or the process was paused past the lease: see
///   [`CallContext::is_lease_lost`](crate::CallContext::is_lease_lost)) does not run: its
///   future is never polled, and the step is [`Error::NotRecorded`] caused by
///   [`Error::LeaseLost`]. A recorded step still replays: that performs nothing.
/// - Inside the step's future, [`step_downstream_key`](crate::step_downstream_key) gives the
///   key of the step's next downstream request (the step's name and its number in the step),
///   the same in every attempt: idem-client sends it by itself.
/// - A step that ran but could not be recorded (the store failed past its retries, or the
///   value does not serialise) is [`Error::NotRecorded`], and the key is held until its
///   lease passes instead of being released.
/// - A name that already holds a value in this run (recorded, replayed, or running
///   concurrently) is [`Error::DuplicateStep`]: two steps under one name would get each
///   other's value. A recorded value that no longer decodes as `T` is [`Error::Codec`].
/// - Outside an idempotent body, `step` just runs `future`. Inside tasks the body spawns there
///   is no call context either, unless the task runs under
///   [`CallContext::scope`](crate::CallContext::scope): steps belong in the body itself, or in a
///   task that carries its call.
///
/// The error type must convert from [`Error`], like an idempotent function's own; map a
/// foreign one first: `step("charge", async { gateway.charge(&req).await.map_err(MyError::from) })`.
pub async fn step<T, E, F>(name: &str, future: F) -> Result<T, E>
where
    T: Serialize + DeserializeOwned,
    E: From<Error>,
    F: Future<Output = Result<T, E>>,
{
    let Some(context) = context() else {
        return future.await;
    };
    let journal = context.journal();
    let running = match journal.begin(name)? {
        Begun::Recorded(recorded) if crate::store::is_sealed(&recorded) => {
            return Err(Error::CorruptRecord {
                key: context.key().as_str().to_owned(),
                reason: format!(
                    "the value of step `{name}` is sealed, and this handle has no keyring to open it"
                ),
            }
            .into());
        }
        Begun::Recorded(recorded) => {
            tracing::debug!(target: crate::TARGET, key = context.key().as_str(), step = name, "step replayed from the record");
            return serde_json::from_slice(&recorded).map_err(|e| Error::codec(e).into());
        }
        Begun::Run(running) => running,
    };
    let key = context.key().as_str();
    if context.is_lease_lost() {
        // Another caller may hold the key: this step's effect would be a second one. Refused
        // before its future is polled, so nothing of it happens.
        tracing::error!(target: crate::TARGET, key, step = name, "the lease is known lost: the step does not run");
        return Err(Error::LeaseLost {
            key: key.to_owned(),
        }
        .after_run(key)
        .into());
    }
    // An `Err` drops `running`, which frees the name for another try.
    let value = downstream::in_step(name, future).await?;
    running.ran();
    let encoded = match serde_json::to_vec(&value) {
        Ok(encoded) => encoded,
        Err(error) => {
            tracing::error!(target: crate::TARGET, key, step = name, %error, "the step ran but its value could not be serialised; the key stays reserved until its lease passes");
            return Err(Error::codec(error).after_run(key).into());
        }
    };
    journal.record(name, encoded).await?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn outside_an_idempotent_body_a_step_just_runs() {
        let mut runs = 0;
        for _ in 0..2 {
            let value = step("charge", async {
                runs += 1;
                Ok::<_, Error>(runs)
            })
            .await
            .unwrap();
            assert_eq!(value, runs);
        }
        assert_eq!(runs, 2, "with no record, nothing is replayed or refused");
    }
}
