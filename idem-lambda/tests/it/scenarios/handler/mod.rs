//! The idempotent handler's scenarios, a file per topic, and what they share: the events,
//! counting handlers, a first run held mid-way.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idem_lambda::{Error, IdempotentHandler};
use lambda_runtime::{service_fn, Diagnostic, LambdaEvent, Service};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Semaphore};

use super::Subject;

mod answers;
mod deadlines;
mod keys;
mod replay;

pub use answers::*;
pub use deadlines::*;
pub use keys::*;
pub use replay::*;

type HandlerError = lambda_runtime::Error;
type Answer = Result<Value, Error<HandlerError>>;

/// An API Gateway event whose JSON body holds `order_id` and `amount`, sent by the principal
/// `user-1` (a REST API's Lambda authorizer named it).
pub fn api_event(order_id: Value, amount: u64, request_id: &str) -> Value {
    let body = json!({"order_id": order_id, "amount": amount}).to_string();
    json!({
        "body": body,
        "requestContext": {
            "requestId": request_id,
            "httpMethod": "POST",
            "resourcePath": "/orders",
            "requestTimeEpoch": 1_700_000_000_000u64,
            "authorizer": {"principalId": "user-1"},
        },
    })
}

/// A handler that counts its runs and answers with the request id that ran it.
fn counting(
    runs: &Arc<AtomicUsize>,
) -> impl Service<LambdaEvent<Value>, Response = Value, Error = HandlerError, Future = impl Send>
       + Clone
       + Send
       + 'static {
    let runs = runs.clone();
    service_fn(move |event: LambdaEvent<Value>| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, HandlerError>(json!({"statusCode": 201, "body": event.context.request_id}))
        }
    })
}

/// A handler whose first run is held until `gate` opens (or for ever, as a hung invocation);
/// later runs answer at once, so a duplicate wrongly let in shows as a second run rather than
/// a hang. Answers with the request id that ran it.
struct FirstRunHeld {
    runs: Arc<AtomicUsize>,
    gate: Arc<Semaphore>,
    started: mpsc::UnboundedReceiver<()>,
    sender: mpsc::UnboundedSender<()>,
}

impl FirstRunHeld {
    fn new() -> Self {
        let (sender, started) = mpsc::unbounded_channel();
        FirstRunHeld {
            runs: Arc::new(AtomicUsize::new(0)),
            gate: Arc::new(Semaphore::new(0)),
            started,
            sender,
        }
    }

    fn service(
        &self,
    ) -> impl Service<LambdaEvent<Value>, Response = Value, Error = HandlerError, Future = impl Send>
           + Clone
           + Send
           + 'static {
        let (runs, gate, started) = (self.runs.clone(), self.gate.clone(), self.sender.clone());
        service_fn(move |event: LambdaEvent<Value>| {
            let (runs, gate, started) = (runs.clone(), gate.clone(), started.clone());
            async move {
                if runs.fetch_add(1, Ordering::SeqCst) == 0 {
                    started.send(()).unwrap();
                    let _open = gate.acquire().await.unwrap();
                }
                Ok::<_, HandlerError>(json!({"body": event.context.request_id}))
            }
        })
    }

    /// Invokes `handler` with `event` in a task of its own, once its first run started.
    async fn first<S>(
        &mut self,
        handler: &S,
        event: LambdaEvent<Value>,
    ) -> tokio::task::JoinHandle<Answer>
    where
        S: Service<LambdaEvent<Value>, Response = Value, Error = Error<HandlerError>>
            + Clone
            + Send
            + 'static,
        S::Future: Send,
    {
        let mut handler = handler.clone();
        let first = tokio::spawn(async move { handler.call(event).await });
        self.started.recv().await.unwrap();
        first
    }

    fn release(&self) {
        self.gate.add_permits(1);
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

fn orders(subject: &Subject) -> idem_lambda::IdempotentHandlerBuilder {
    IdempotentHandler::builder(subject.idem.clone()).event_key("powertools_json(body).order_id")
}

async fn invoke<S>(handler: &mut S, subject: &Subject, event: Value, request_id: &str) -> Answer
where
    S: Service<LambdaEvent<Value>, Response = Value, Error = Error<HandlerError>>,
{
    let event = LambdaEvent::new(event, subject.context(request_id));
    handler.call(event).await
}

fn error_type(answer: Answer) -> String {
    Diagnostic::from(answer.expect_err("an error")).error_type
}
