//! A front-end run as the checker reads it: the servers' executions (engine calls' bodies,
//! from the servers' histories), the callers' requests and what came back (from the callers'
//! history), and the downstream service's charges.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::check::model::{CallRecord, Run};
use crate::history::{Ending, Event};

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

/// A front-end run: the executions and requests in `run`, by the key `PRINCIPAL/KEY`, and the
/// downstream's charges.
#[derive(Debug, Default)]
pub struct FrontRun {
    /// The servers' executions and the callers' requests (process [`CALLERS`]).
    pub run: Run,
    /// The downstream service's charges by order (`PRINCIPAL/KEY`): the handler executions
    /// that made them.
    pub charges: BTreeMap<String, Vec<String>>,
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

    /// Adds the downstream service's history: one effect per charge, under its order.
    pub fn add_downstream(&mut self, events: Vec<Event>) {
        for event in events {
            if let Event::Effect { call, key, .. } = event {
                self.charges.entry(key).or_default().push(call);
            }
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

/// Whether `call` is a caller's request rather than a server's execution.
pub(crate) fn is_request(call: &CallRecord) -> bool {
    call.process == CALLERS
}
