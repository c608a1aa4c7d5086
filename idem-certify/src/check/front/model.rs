//! A front-end run as the checker reads it: the servers' executions (engine calls' bodies,
//! from the servers' histories), the callers' requests and what came back (from the callers'
//! history), the call context each execution ran in (from the servers' context lines), and
//! the downstream service's charges (with the key each was asked under).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::check::model::{CallRecord, Run};
use crate::history::Ending;

/// The process name of the callers' requests in a front-end run.
pub const CALLERS: &str = "callers";

/// One line of the callers' history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ClientEvent {
    /// A request is sent through idem-client (with its retries).
    Send {
        /// The request's id, unique in the run.
        call: String,
        /// The principal it is sent as (its bearer token).
        principal: String,
        /// Its `Idempotency-Key`.
        key: String,
        /// Its body.
        payload: String,
        /// The server's URL.
        server: String,
        /// When, in microseconds since the epoch.
        t: u64,
    },
    /// An answer came back.
    Answer {
        /// The request.
        call: String,
        /// Its status.
        status: u16,
        /// Its body.
        body: String,
        /// Whether it says it is a replay (`Idempotent-Replayed: true`).
        replayed: bool,
        /// When.
        t: u64,
    },
    /// No answer came back: idem-client gave up.
    Failed {
        /// The request.
        call: String,
        /// Why.
        error: String,
        /// When.
        t: u64,
    },
}

/// The call context an execution ran in, written by its server once the handler is in the
/// engine's call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionContext {
    /// The execution.
    pub call: String,
    /// The caller's request it ran for (the `x-certify-request` header; idem-client's retries
    /// of one request keep it).
    pub request: String,
    /// The key `PRINCIPAL/KEY` its request asked with.
    pub key: String,
    /// The HTTP request (the attempt) it ran for, named by its server before the layer.
    #[serde(default)]
    pub attempt: String,
    /// The engine's key of its call context (`context().key()`).
    pub context_key: String,
}

/// What a server answered one attempt (one HTTP request), as seen outside the layer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedAttempt {
    /// The attempt.
    pub attempt: String,
    /// The answer's status.
    pub status: u16,
    /// Whether it said it was a replay.
    pub replayed: bool,
    /// The execution it came from, when the answer names it (a first answer does).
    pub execution: Option<String>,
    /// When, in microseconds since the epoch.
    pub t: u64,
}

/// One charge the downstream service made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charge {
    /// The charge (`downstream:N`), which its answer names.
    pub call: String,
    /// The order charged (`PRINCIPAL/KEY`), the request's body.
    pub order: String,
    /// The `Idempotency-Key` it was asked under.
    pub key: String,
    /// When, in microseconds since the epoch.
    pub t: u64,
}

/// A front-end run: the executions and requests in `run`, by the key `PRINCIPAL/KEY`, and the
/// downstream's charges.
#[derive(Debug, Default)]
pub struct FrontRun {
    /// The servers' executions and the callers' requests (process [`CALLERS`]).
    pub run: Run,
    /// The downstream service's charges by order (`PRINCIPAL/KEY`).
    pub charges: BTreeMap<String, Vec<Charge>>,
    /// Whether the endpoint charged at a downstream service: every success names its charge.
    pub downstream: bool,
    /// Each answered request's status and whether it said it was a replay.
    pub statuses: BTreeMap<String, (u16, bool)>,
    /// The call context of each execution that reached the handler, by execution.
    pub contexts: BTreeMap<String, ExecutionContext>,
    /// What the servers answered, attempt by attempt.
    pub served: Vec<ServedAttempt>,
    /// Whether the keys are scoped by the principal of the request context, as idem-lambda
    /// scopes them (`--front lambda`): each call context's scope must be the one its
    /// principal's authorizer names, not idem-http's default (a digest of `Authorization`).
    pub scoped_by_principal: bool,
}

impl FrontRun {
    /// Adds the callers' history: each request is a call without a body, whose answer is its
    /// ending (a success as a value, any other status as an error of class `HTTP <status>`).
    pub fn add_callers(&mut self, events: Vec<ClientEvent>) {
        for event in events {
            match event {
                ClientEvent::Send {
                    call,
                    principal,
                    key,
                    payload,
                    t,
                    ..
                } => {
                    let record = self.request(&call);
                    record.key = format!("{principal}/{key}");
                    record.payload = payload;
                    record.invoked = t;
                }
                ClientEvent::Answer {
                    call,
                    status,
                    body,
                    replayed,
                    t,
                } => {
                    self.statuses.insert(call.clone(), (status, replayed));
                    let ending = if (200..300).contains(&status) {
                        Ending::Ok {
                            answer: body,
                            replayed,
                        }
                    } else {
                        Ending::Error {
                            class: format!("HTTP {status}"),
                            message: body,
                        }
                    };
                    self.request(&call).ending = Some((ending, t));
                }
                ClientEvent::Failed { call, error, t } => {
                    let ending = Ending::Error {
                        class: "Unanswered".to_owned(),
                        message: error,
                    };
                    self.request(&call).ending = Some((ending, t));
                }
            }
        }
    }

    /// Adds the downstream service's charges: every success must now name its charge.
    pub fn add_charges(&mut self, charges: Vec<Charge>) {
        self.downstream = true;
        for charge in charges {
            self.charges
                .entry(charge.order.clone())
                .or_default()
                .push(charge);
        }
    }

    /// Adds servers' records of their attempts.
    pub fn add_served(&mut self, served: Vec<ServedAttempt>) {
        self.served.extend(served);
    }

    /// Adds servers' context lines.
    pub fn add_contexts(&mut self, contexts: Vec<ExecutionContext>) {
        for context in contexts {
            self.contexts.insert(context.call.clone(), context);
        }
    }

    fn request(&mut self, id: &str) -> &mut CallRecord {
        self.run
            .calls
            .entry(id.to_owned())
            .or_insert_with(|| CallRecord {
                id: id.to_owned(),
                process: CALLERS.to_owned(),
                ..CallRecord::default()
            })
    }
}

/// An answer's parts: `EXECUTION|PRINCIPAL|BODY`, and `|CHARGE` after them when the
/// endpoint charges at a downstream (`CHARGE` is `downstream:N@ORDER`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Answer<'a> {
    /// The execution that made it.
    pub execution: Option<&'a str>,
    /// The principal it was made for.
    pub principal: Option<&'a str>,
    /// The request's body it was made for.
    pub payload: Option<&'a str>,
    /// The downstream's charge it names.
    pub charge: Option<&'a str>,
}

impl<'a> Answer<'a> {
    /// The parts of `answer`.
    pub fn of(answer: &'a str) -> Self {
        let mut parts = answer.splitn(4, '|');
        Answer {
            execution: parts.next(),
            principal: parts.next(),
            payload: parts.next(),
            charge: parts.next(),
        }
    }
}

/// Whether `call` is a caller's request rather than a server's execution.
pub(crate) fn is_request(call: &CallRecord) -> bool {
    call.process == CALLERS
}
