//! The certified endpoint's handler, the same behind every front end: two steps, each a side
//! effect written to the server's history (the first, with a downstream service, a charge
//! there through idem-client), and an answer that names the execution, the principal it ran
//! for and the request's body, so that the checker can tell whose answer reached whom.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idem_client::reqwest_middleware::ClientWithMiddleware;
use idem_core::{context, step, CallContext};

use crate::check::front::SERVICE_ERROR;
use crate::history::{now_micros, Ending, Event, HistoryWriter, Op};
use crate::workload::{class_of, STEPS};

/// What a request asks of the handler, named in its body after the key: `KEY:slow`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Two steps, one after the other.
    Plain,
    /// A pause longer than the lease between the steps, which the layer's renewals cover.
    Slow,
    /// The first attempt fails after its first step as the handler's service: actix-web's
    /// middleware inside the layer turns its answer into an `Err`, and the layer holds the key
    /// until its lease passes; then a retry takes over and resumes after the recorded step.
    /// (The tower front end answers it as a 503, which releases the key: not sent there.)
    ServiceError,
}

impl Shape {
    /// Its name in a request's body.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Shape::Plain => "plain",
            Shape::Slow => "slow",
            Shape::ServiceError => "service-error",
        }
    }

    /// The shape a request's body names (plain when it names none).
    fn of(payload: &str) -> Shape {
        match payload.rsplit(':').next() {
            Some("slow") => Shape::Slow,
            Some("service-error") => Shape::ServiceError,
            _ => Shape::Plain,
        }
    }
}

/// The handler's answer, for the front end to render.
pub(crate) enum Handled {
    /// 201, with `EXECUTION|PRINCIPAL|BODY`.
    Created(String),
    /// 503 with the reason: not stored, so the key is released (kept for the same request
    /// once a step was recorded).
    Unavailable(String),
    /// The handler's service fails with this reason after the handler began: the layer holds
    /// the key until its lease passes.
    ServiceError(String),
}

/// The downstream service the first step charges at.
pub(crate) struct Downstream {
    /// The client, with idem-client's middleware.
    pub(crate) client: ClientWithMiddleware,
    /// The charges endpoint's URL.
    pub(crate) url: String,
}

impl Downstream {
    /// Charges `order`: the downstream's answer, or why there is none.
    async fn charge(&self, order: &str) -> Result<String, String> {
        let response = self
            .client
            .post(&self.url)
            .bearer_auth("upstream")
            .body(order.to_owned())
            .send()
            .await
            .map_err(|error| format!("the downstream is unreachable: {error}"))?;
        let status = response.status();
        let body = response.text().await.map_err(|error| error.to_string())?;
        if status.is_success() {
            Ok(body)
        } else {
            Err(format!("the downstream answered {status}: {body}"))
        }
    }
}

/// Why a step failed.
enum StepFailed {
    Idem(idem_core::Error),
    Downstream(String),
}

impl From<idem_core::Error> for StepFailed {
    fn from(error: idem_core::Error) -> Self {
        StepFailed::Idem(error)
    }
}

/// The endpoint of one server process.
pub(crate) struct Endpoint {
    name: String,
    history: Arc<HistoryWriter>,
    executions: AtomicU64,
    downstream: Option<Downstream>,
    lease: Duration,
}

impl Endpoint {
    /// The endpoint of server `name`, appending to `history`.
    pub(crate) fn new(
        name: String,
        history: HistoryWriter,
        downstream: Option<Downstream>,
        lease: Duration,
    ) -> Self {
        Endpoint {
            name,
            history: Arc::new(history),
            executions: AtomicU64::new(0),
            downstream,
            lease,
        }
    }

    /// Handles a request of `principal` with `key` and body `payload`: one execution in the
    /// history, whose events are those of an engine call's body, under the key `PRINCIPAL/KEY`.
    pub(crate) async fn handle(&self, principal: &str, key: &str, payload: &str) -> Handled {
        let call = format!(
            "{}:{}",
            self.name,
            self.executions.fetch_add(1, Ordering::Relaxed)
        );
        let scoped = format!("{principal}/{key}");
        self.history.write(&Event::Invoke {
            call: call.clone(),
            key: scoped.clone(),
            payload: payload.to_owned(),
            op: Op::Contend,
            t: now_micros(),
        });
        // Outside the engine's call (a front end that failed to enter it) there is no body to
        // record: the checker sees effects without one.
        let ctx = context();
        if let Some(ctx) = &ctx {
            self.history.write(&Event::Body {
                call: call.clone(),
                attempt: ctx.attempt(),
                fencing: ctx.fencing_token(),
                t: now_micros(),
            });
        }
        let _watching = ctx.as_ref().map(|ctx| self.watch(ctx, &call));
        let fencing = ctx.as_ref().map_or(0, CallContext::fencing_token);
        let lost = || ctx.as_ref().is_some_and(CallContext::is_lease_lost);
        let shape = Shape::of(payload);
        let mut lease_lost = false;
        for (index, name) in STEPS.into_iter().enumerate() {
            if index > 0 && shape == Shape::Slow {
                tokio::time::sleep(self.lease * 3 / 2).await;
            }
            if lost() {
                lease_lost = true;
                break;
            }
            let done = step(name, self.effect(&call, &scoped, name, fencing)).await;
            if let Err(failed) = done {
                return self.failed(call, failed);
            }
            self.history.write(&Event::StepDone {
                call: call.clone(),
                step: name.to_owned(),
                t: now_micros(),
            });
            let first_attempt = ctx.as_ref().is_none_or(|ctx| ctx.attempt() <= 1);
            if index == 0 && shape == Shape::ServiceError && first_attempt {
                self.end(&call, false, Some(SERVICE_ERROR));
                return Handled::ServiceError("the service failed after its first step".into());
            }
        }
        lease_lost |= lost();
        self.end(&call, lease_lost, lease_lost.then_some("LeaseLost"));
        if lease_lost {
            return Handled::Unavailable("the handler stopped: its lease was lost".into());
        }
        Handled::Created(format!("{call}|{principal}|{payload}"))
    }

    /// Step `name`'s effect: written to the history as it is performed; a charge at the
    /// downstream service once the downstream took it (a charge refused was not performed).
    async fn effect(
        &self,
        call: &str,
        key: &str,
        name: &str,
        fencing: u64,
    ) -> Result<String, StepFailed> {
        let answer = match (&self.downstream, name == STEPS[0]) {
            (Some(downstream), true) => downstream
                .charge(key)
                .await
                .map_err(StepFailed::Downstream)?,
            _ => name.to_owned(),
        };
        self.history.write(&Event::Effect {
            call: call.to_owned(),
            key: key.to_owned(),
            step: name.to_owned(),
            fencing,
            t: now_micros(),
        });
        Ok(answer)
    }

    fn failed(&self, call: String, failed: StepFailed) -> Handled {
        let (class, why) = match failed {
            StepFailed::Idem(error) => (class_of(&error), error.to_string()),
            StepFailed::Downstream(why) => ("Failed", why),
        };
        self.end(&call, false, Some(class));
        Handled::Unavailable(why)
    }

    /// The body's end, and, when it ends in an error, the error's class as the call's ending.
    fn end(&self, call: &str, lease_lost: bool, error: Option<&str>) {
        self.history.write(&Event::BodyEnd {
            call: call.to_owned(),
            lease_lost,
            t: now_micros(),
        });
        if let Some(class) = error {
            self.history.write(&Event::Complete {
                call: call.to_owned(),
                ending: Ending::Error {
                    class: class.to_owned(),
                    message: String::new(),
                },
                t: now_micros(),
            });
        }
    }

    /// Writes when the engine tells the body its lease is lost, until dropped.
    fn watch(&self, ctx: &CallContext, call: &str) -> AbortOnDrop {
        let (ctx, history, call) = (ctx.clone(), self.history.clone(), call.to_owned());
        AbortOnDrop(tokio::spawn(async move {
            ctx.lease_lost().await;
            history.write(&Event::LeaseLost {
                call,
                t: now_micros(),
            });
        }))
    }
}

/// Aborts a task when dropped: the lease watcher ends with its execution.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
