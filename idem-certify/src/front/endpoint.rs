//! The certified endpoint's handler, the same behind every front end: two steps, each a side
//! effect written to the server's history (the first, with a downstream service, a charge
//! there through idem-client), and an answer that names the execution, the principal it ran
//! for and the request's body, so that the checker can tell whose answer reached whom.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idem_client::reqwest_middleware::ClientWithMiddleware;
use idem_core::{context, step, CallContext};

use crate::check::front::model::ExecutionContext;
use crate::check::front::SERVICE_ERROR;
use crate::front::lines::JsonLines;
use crate::history::{now_micros, Ending, Event, HistoryWriter, Op};
use crate::workload::{class_of, STEPS};

/// What a request asks of the handler, named in its body after the key: `KEY:slow`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Two steps, one after the other.
    Plain,
    /// A pause longer than the lease between the steps, which the layer's renewals cover.
    Slow,
    /// The first attempt fails after its first step as the handler's service: a middleware
    /// inside the layer turns its answer into the framework's failure (actix-web's `Err`,
    /// poem's `poem::Error`, salvo's 5xx `StatusError`, the Lambda function's error), and the
    /// layer holds the key until its lease passes; then a retry takes over and resumes after
    /// the recorded step. (The tower front end answers it as a 503, which releases the key:
    /// not sent there.)
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
    /// 201, with `EXECUTION|PRINCIPAL|BODY`, and `|CHARGE` (the downstream's answer) with a
    /// downstream.
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
    /// Charges `order`: the downstream's answer, or why there is none (idem-client's own
    /// refusal, once the call's lease is lost, as the engine's error).
    async fn charge(&self, order: &str) -> Result<String, StepFailed> {
        let sent = self
            .client
            .post(&self.url)
            .bearer_auth("upstream")
            .body(order.to_owned())
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(idem_client::reqwest_middleware::Error::Middleware(error))
                if error.is::<idem_core::Error>() =>
            {
                let error = error.downcast::<idem_core::Error>().expect("checked");
                return Err(StepFailed::Idem(error));
            }
            Err(error) => {
                let why = format!("the downstream is unreachable: {error}");
                return Err(StepFailed::Downstream(why));
            }
        };
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|error| StepFailed::Downstream(error.to_string()))?;
        if status.is_success() {
            Ok(body)
        } else {
            let why = format!("the downstream answered {status}: {body}");
            Err(StepFailed::Downstream(why))
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

/// Who asks what: a request's principal (its bearer token), its `Idempotency-Key`, and the
/// caller's id for it (`x-certify-request`).
pub(crate) struct Asked {
    /// The principal.
    pub(crate) principal: String,
    /// The key.
    pub(crate) key: String,
    /// The caller's request id.
    pub(crate) request: String,
    /// The attempt, as its server named it before the layer.
    pub(crate) attempt: String,
}

/// The endpoint of one server process.
pub(crate) struct Endpoint {
    name: String,
    history: Arc<HistoryWriter>,
    contexts: JsonLines,
    executions: AtomicU64,
    downstream: Option<Downstream>,
    lease: Duration,
}

impl Endpoint {
    /// The endpoint of server `name`, appending to `history` and its call contexts to
    /// `contexts`.
    pub(crate) fn new(
        name: String,
        history: HistoryWriter,
        contexts: JsonLines,
        downstream: Option<Downstream>,
        lease: Duration,
    ) -> Self {
        Endpoint {
            name,
            history: Arc::new(history),
            contexts,
            executions: AtomicU64::new(0),
            downstream,
            lease,
        }
    }

    /// Handles `asked` with body `payload`: one execution in the history, whose events are
    /// those of an engine call's body, under the key `PRINCIPAL/KEY`, and a line naming the
    /// call context it ran in.
    pub(crate) async fn handle(&self, asked: &Asked, payload: &str) -> Handled {
        let call = format!(
            "{}:{}",
            self.name,
            self.executions.fetch_add(1, Ordering::Relaxed)
        );
        let principal = &asked.principal;
        let scoped = format!("{principal}/{}", asked.key);
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
            self.contexts.write(&ExecutionContext {
                call: call.clone(),
                request: asked.request.clone(),
                key: scoped.clone(),
                attempt: asked.attempt.clone(),
                context_key: ctx.key().as_str().to_owned(),
            });
        }
        let _watching = ctx.as_ref().map(|ctx| self.watch(ctx, &call));
        let fencing = ctx.as_ref().map_or(0, CallContext::fencing_token);
        let lost = || ctx.as_ref().is_some_and(CallContext::is_lease_lost);
        let shape = Shape::of(payload);
        let mut charge = None;
        // No look at the lease before a step: `step` refuses once the lease is lost (and
        // idem-client refuses the charge), and that refusal, recorded as the execution's
        // ending, is what is certified.
        for (index, name) in STEPS.into_iter().enumerate() {
            if index > 0 && shape == Shape::Slow {
                tokio::time::sleep(self.lease * 3 / 2).await;
            }
            let done = step(name, self.effect(&call, &scoped, name, fencing)).await;
            match done {
                Err(failed) => return self.failed(call, failed),
                Ok(answer) if index == 0 && self.downstream.is_some() => charge = Some(answer),
                Ok(_) => {}
            }
            self.history.write(&Event::StepDone {
                call: call.clone(),
                step: name.to_owned(),
                t: now_micros(),
            });
            let first_attempt = ctx.as_ref().is_none_or(|ctx| ctx.attempt() <= 1);
            // A service that fails once its lease is lost says so instead: its key is no
            // longer its own to hold.
            if index == 0 && shape == Shape::ServiceError && first_attempt && !lost() {
                self.end(&call, false, Some(SERVICE_ERROR));
                return Handled::ServiceError("the service failed after its first step".into());
            }
        }
        let lease_lost = lost();
        self.end(&call, lease_lost, lease_lost.then_some("LeaseLost"));
        if lease_lost {
            return Handled::Unavailable("the handler stopped: its lease was lost".into());
        }
        let charge = charge.map_or(String::new(), |charge| format!("|{charge}"));
        Handled::Created(format!("{call}|{principal}|{payload}{charge}"))
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
            (Some(downstream), true) => downstream.charge(key).await?,
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
