//! What a worker does until its plan's deadline: idempotent calls on a few hot keys, whose
//! bodies perform side effects in two steps, with every kind of call the contract covers, and
//! retries aimed at the keys other callers hold through a long pause.

pub(crate) mod board;
mod choices;

use std::sync::Arc;
use std::time::Duration;

use idem_core::{context, step, Call, Error, Fingerprint, Idempotency};
use serde::{Deserialize, Serialize};

use crate::history::{now_micros, Ending, Event, HistoryWriter, Op};
use crate::plan::WorkerPlan;
use board::{Board, Holder};

/// The keys callers contend on at once: fresh ones every [`EPOCH`].
const HOT_KEYS: u64 = 12;
/// How long a set of hot keys is hot. Older keys are called again as retries.
const EPOCH: Duration = Duration::from_secs(1);
/// How many epochs back a retry reaches.
const RETRY_EPOCHS: u64 = 8;
/// How long a record is kept: longer than any run, so that no answer expires before the end.
const TTL: Duration = Duration::from_secs(3_600);
/// The steps of every body, each one side effect.
pub(crate) const STEPS: [&str; 2] = ["charge", "ship"];
/// The one side effect of a body without steps.
pub(crate) const STEPLESS_EFFECT: &str = "deliver";
/// Every this many hot keys, one is called with a body without steps: a key is one
/// function's, and its record never holds steps.
const STEPLESS_EVERY: u64 = 3;

/// Every this many hot keys, one is a slow function's: its bodies take half a lease or more.
const SLOW_EVERY: u64 = 4;

/// Every this many calls, one is a retry aimed at a key another caller holds through a long
/// pause, listed on the [`Board`]: it takes the key over as soon as its lease passes (a stall,
/// a process stopped mid-pause), while its owner may still wake, renew, record or complete.
const AIM_EVERY: u32 = 4;

/// The index of key `name` (`k{epoch}-{index}`) among the hot keys.
fn key_index(name: &str) -> u64 {
    name.rsplit('-')
        .next()
        .and_then(|index| index.parse().ok())
        .unwrap_or_default()
}

/// Whether the body called on key `name` has no steps.
pub(crate) fn stepless(name: &str) -> bool {
    key_index(name).is_multiple_of(STEPLESS_EVERY)
}

/// Whether the body called on key `name` is slow, whatever the call's op.
fn slow_function(name: &str) -> bool {
    key_index(name) % SLOW_EVERY == 1
}

/// A body's error: stored as the outcome (`Declined`), or not.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum BodyError {
    /// Stored and replayed, like a payment declined after the card was charged.
    Declined(String),
    /// A failure before any effect: the key is released.
    Failed,
    /// An error of the engine, by variant.
    Idem {
        /// The variant.
        class: String,
        /// Its message.
        message: String,
    },
}

impl From<Error> for BodyError {
    fn from(error: Error) -> Self {
        BodyError::Idem {
            class: class_of(&error).to_owned(),
            message: error.to_string(),
        }
    }
}

/// The variant name of `error`.
pub(crate) fn class_of(error: &Error) -> &'static str {
    match error {
        Error::InProgress { .. } => "InProgress",
        Error::Mismatch { .. } => "Mismatch",
        Error::Store { .. } => "Store",
        Error::QuotaExceeded { .. } => "QuotaExceeded",
        Error::StoreFull { .. } => "StoreFull",
        Error::LeaseLost { .. } => "LeaseLost",
        Error::NotRecorded { .. } => "NotRecorded",
        Error::Aborted { .. } => "Aborted",
        Error::Codec(_) => "Codec",
        Error::CorruptRecord { .. } => "CorruptRecord",
        Error::DuplicateStep { .. } => "DuplicateStep",
        _ => "Other",
    }
}

/// The arguments a key is called with, unless the call is a [`Op::Mismatch`].
pub(crate) fn payload_of(key: &str) -> String {
    format!("args-of-{key}")
}

/// The answer of call `call` with `payload`: unique to the execution that produced it.
pub(crate) fn answer(call: &str, payload: &str) -> String {
    format!("{call}|{payload}")
}

/// The key `name` of run `run`, as workers call it and the checker reads it back.
pub(crate) fn run_key(idem: &Idempotency, run: &str, name: &str) -> idem_core::Key {
    idem.key("certify")
        .part(run)
        .part(name)
        .finish()
        .expect("the run's keys are valid")
}

/// One worker: a handle on the store, and where its history goes.
pub(crate) struct Worker {
    plan: WorkerPlan,
    idem: Idempotency,
    history: Arc<HistoryWriter>,
    board: Arc<Board>,
    rng: fastrand::Rng,
    /// How many calls this worker began: the sequence in its call ids.
    calls: u64,
}

impl Worker {
    /// A worker following `plan` on `idem`, listing its long pauses on `board`.
    pub(crate) fn new(
        plan: WorkerPlan,
        idem: Idempotency,
        history: Arc<HistoryWriter>,
        board: Arc<Board>,
    ) -> Self {
        let rng = fastrand::Rng::with_seed(plan.seed);
        Worker {
            plan,
            idem,
            history,
            board,
            rng,
            calls: 0,
        }
    }

    /// Calls until the deadline.
    pub(crate) async fn run(mut self) {
        while now_micros() < self.plan.until_micros {
            self.one_call().await;
            // A breath between calls, so that a fast store's history stays readable.
            tokio::time::sleep(Duration::from_millis(self.rng.u64(1..5))).await;
        }
    }

    async fn one_call(&mut self) {
        let aimed = self.aim();
        let op = if aimed.is_some() {
            Op::Retry
        } else {
            self.pick_op()
        };
        let key_name = aimed.unwrap_or_else(|| self.pick_key(op));
        let payload = match op {
            Op::Mismatch => format!("other-args-{}", self.rng.u32(..)),
            _ => payload_of(&key_name),
        };
        self.calls += 1;
        let call_id = format!("{}-{}", self.plan.name, self.calls);
        let key = run_key(&self.idem, &self.plan.run, &key_name);
        let fingerprint = Fingerprint::of(&payload).expect("a string fingerprints");
        let lease = self.plan.lease();
        let mut call = Call::new(key, fingerprint).with_ttl(TTL).with_lease(lease);
        match op {
            Op::Stall | Op::StallAtEnd | Op::Heedless => call = call.without_renewal(),
            Op::Wait => call = call.with_wait(lease * 3),
            // Renewed as seldom as the engine allows: a store that takes over a lease its
            // owner renewed is then caught before the owner's next renewal tells it, later than
            // the clocks' offsets excuse.
            Op::Slow => call = call.with_renew_every(lease / 2),
            _ => {}
        }
        let key_stepless = stepless(&key_name);
        let key_slow = slow_function(&key_name);
        self.history.write(&Event::Invoke {
            call: call_id.clone(),
            key: key_name.clone(),
            payload: payload.clone(),
            op,
            t: now_micros(),
        });
        let pause = self.pause(op, lease, key_slow);
        // A slow function's last step waits for its downstream's answer after its effect
        // landed: a process stopped then records the step once it wakes, maybe after a
        // takeover, which the store must refuse.
        let answer = if key_slow && matches!(op, Op::Contend | Op::Retry | Op::Wait | Op::StepRetry)
        {
            lease / 2 + Duration::from_millis(self.rng.u64(..lease.as_millis() as u64 / 2))
        } else {
            Duration::ZERO
        };
        let shape = Shape {
            op,
            pause,
            answer,
            stepless: key_stepless,
            holder: Holder {
                board: self.board.clone(),
                call: call_id.clone(),
                key: key_name,
                op,
            },
            // Outlasts a stop of the owner it took the key from, which then wakes and renews.
            recovery: lease + Duration::from_millis(self.rng.u64(..lease.as_millis() as u64)),
        };
        let body = body(self.history.clone(), call_id.clone(), payload, shape);
        let run = self.idem.run_storing_errors(
            call,
            |error| matches!(error, BodyError::Declined(_)),
            body,
        );
        let ending = if op == Op::Abandon {
            match tokio::time::timeout(lease / 2, run).await {
                Ok(result) => ending_of(result, &call_id),
                Err(_) => Ending::Abandoned,
            }
        } else {
            ending_of(run.await, &call_id)
        };
        self.history.write(&Event::Complete {
            call: call_id,
            ending,
            t: now_micros(),
        });
    }
}

/// How the call's result reads in the history.
fn ending_of(result: Result<idem_core::Answered<String>, BodyError>, call: &str) -> Ending {
    match result {
        Ok(done) => Ending::Ok {
            answer: done.value,
            replayed: done.replayed,
        },
        Err(BodyError::Declined(answer)) => Ending::StoredErr {
            replayed: !answer.starts_with(&format!("{call}|")),
            answer,
        },
        Err(BodyError::Failed) => Ending::Error {
            class: "Failed".to_owned(),
            message: "the body failed before any effect".to_owned(),
        },
        Err(BodyError::Idem { class, message }) => Ending::Error { class, message },
    }
}

/// The body of every call: two steps, each a side effect written to the history first, or
/// one effect without steps.
async fn body(
    history: Arc<HistoryWriter>,
    call: String,
    payload: String,
    shape: Shape,
) -> Result<String, BodyError> {
    let Shape {
        op,
        pause,
        answer: answer_delay,
        stepless,
        recovery,
        holder,
    } = shape;
    let ctx = context().expect("the engine runs the body in its call's context");
    let fencing = ctx.fencing_token();
    history.write(&Event::Body {
        call: call.clone(),
        attempt: ctx.attempt(),
        fencing,
        t: now_micros(),
    });
    if op == Op::Fail || (op == Op::FailAfterStep && stepless) {
        return body_failed(&history, call);
    }
    let key = ctx.key().as_str().to_owned();
    // When the engine tells the body its lease is lost, for the checker: a takeover after
    // that is allowed, one before it is not.
    let watcher = tokio::spawn({
        let (ctx, history, call) = (ctx.clone(), history.clone(), call.clone());
        async move {
            ctx.lease_lost().await;
            history.write(&Event::LeaseLost {
                call,
                t: now_micros(),
            });
        }
    });
    let _watching = AbortOnDrop(watcher);
    let effect = |name: &str| Event::Effect {
        call: call.clone(),
        key: key.clone(),
        step: name.to_owned(),
        fencing,
        t: now_micros(),
    };
    // A body that knows it lost its key stops before its next effect, as the contract asks
    // of long bodies.
    let mut lease_lost = false;
    if ctx.attempt() > 1 {
        holder.mark_taken();
        // A body that took the key over first looks into what the earlier attempt did, as
        // `CallContext::attempt` suggests; meanwhile the owner it took the key from may wake
        // and renew, which the store must refuse.
        tokio::time::sleep(recovery).await;
    }
    if stepless {
        // Its pause comes before its one effect (after it for a stall at the end), so that
        // a slow or stalled body without steps is slow before it acts.
        if op != Op::StallAtEnd {
            holder.pause(pause).await;
        }
        lease_lost = op != Op::Heedless && ctx.is_lease_lost();
        if !lease_lost {
            history.write(&effect(STEPLESS_EFFECT));
        }
    }
    for (index, name) in STEPS.into_iter().enumerate().filter(|_| !stepless) {
        if index > 0 && op != Op::StallAtEnd {
            holder.pause(pause).await;
        }
        if op != Op::Heedless && ctx.is_lease_lost() {
            lease_lost = true;
            break;
        }
        // The first try fails before its effect, which leaves the name free for the second;
        // a step a takeover found recorded is replayed instead, and done.
        let replayed = op == Op::StepRetry
            && index == 1
            && step(name, async { Err::<String, _>(BodyError::Failed) })
                .await
                .is_ok();
        if !replayed {
            step(name, async {
                history.write(&effect(name));
                if index + 1 == STEPS.len() {
                    holder.answer(answer_delay).await;
                }
                Ok::<_, BodyError>(name.to_owned())
            })
            .await?;
        }
        history.write(&Event::StepDone {
            call: call.clone(),
            step: name.to_owned(),
            t: now_micros(),
        });
        if op == Op::FailAfterStep {
            return body_failed(&history, call);
        }
    }
    if op == Op::StallAtEnd {
        // Returns without another look at its lease, as most bodies do: the store's owner
        // check is all that keeps its outcome out once a retry took the key over.
        holder.pause(pause).await;
    } else if op != Op::Heedless {
        lease_lost |= ctx.is_lease_lost();
    }
    history.write(&Event::BodyEnd {
        call: call.clone(),
        lease_lost,
        t: now_micros(),
    });
    if lease_lost {
        return Err(BodyError::Idem {
            class: "LeaseLost".to_owned(),
            message: "the body stopped: its lease was lost".to_owned(),
        });
    }
    let answer = answer(&call, &payload);
    match op {
        Op::StoreErr => Err(BodyError::Declined(answer)),
        _ => Ok(answer),
    }
}

/// What a body does, beyond its call.
struct Shape {
    /// What it was asked to do.
    op: Op,
    /// How long it pauses (see [`Worker::pause`]).
    pause: Duration,
    /// How long its last step's downstream takes to answer after the effect.
    answer: Duration,
    /// Whether it has no steps: one effect.
    stepless: bool,
    /// How long it looks into what an earlier attempt did, when it took the key over.
    recovery: Duration,
    /// What it lists on the board while it pauses, and marks when it took the key over.
    holder: Holder,
}

/// The body fails with an error that is not stored: the key is released.
fn body_failed(history: &HistoryWriter, call: String) -> Result<String, BodyError> {
    history.write(&Event::BodyEnd {
        call,
        lease_lost: false,
        t: now_micros(),
    });
    Err(BodyError::Failed)
}

/// Aborts a task when dropped: the lease watcher ends with its body, however the body ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
