//! The contract's handler for actix-web: the contract may finish a call in a task of its own
//! (its client gone), but an actix-web request and its service stay on their worker's thread.
//! The handler is therefore called from a task on that thread, and the contract talks to it
//! through channels; what cannot leave the thread (the request, an error) waits in a place
//! the middleware and that task share. The engine's call goes along with the body, so that the
//! handler runs inside it there: `idem_core::context()`, `step` and the lease are the call's.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, Service, ServiceRequest, ServiceResponse};
use actix_web::HttpResponse;
use bytes::Bytes;
use http::{Request, Response};
use idem_core::CallContext;
use tokio::sync::oneshot;

use crate::actix::head;
use crate::body::Body;
use crate::contract::Handler;

/// The handler failed: its error waits in [`Held`] for the middleware, on the worker's thread.
pub(crate) struct HandlerFailed;

/// What the middleware and the handler's task share on the worker's thread.
#[derive(Default)]
struct Shared {
    /// The request, until the handler takes it.
    pending: Option<ServiceRequest>,
    /// The request back from the handler's response, to answer it with.
    answered: Option<actix_web::HttpRequest>,
    /// The handler's error.
    failure: Option<actix_web::Error>,
}

/// The middleware's side: the request and what the handler left.
pub(crate) struct Held(Rc<RefCell<Shared>>);

impl Held {
    /// `response` as the answer to the request, or, when the request itself is gone (its
    /// handler panicked with it), as an error that actix-web answers with `response`.
    pub(crate) fn respond(
        &self,
        response: HttpResponse<BoxBody>,
    ) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
        let mut shared = self.0.borrow_mut();
        let request = match (shared.pending.take(), shared.answered.take()) {
            (Some(pending), _) => pending.into_parts().0,
            (None, Some(answered)) => answered,
            (None, None) => {
                let error = actix_web::error::InternalError::from_response(
                    "the idempotency layer's answer",
                    response,
                );
                return Err(error.into());
            }
        };
        Ok(ServiceResponse::new(request, response))
    }

    /// The error the handler failed with.
    pub(crate) fn failure(&self) -> actix_web::Error {
        let failure = self.0.borrow_mut().failure.take();
        failure.unwrap_or_else(|| actix_web::error::ErrorInternalServerError("the handler failed"))
    }
}

/// The contract's side: sends the request's body to the handler's task and waits for its
/// response.
pub(crate) struct Relay {
    body: oneshot::Sender<Called>,
    response: oneshot::Receiver<Result<Response<Body>, HandlerFailed>>,
}

/// What the contract hands the handler's task: the request's body, and the engine's call the
/// handler runs in.
struct Called {
    body: Bytes,
    call: Option<CallContext>,
}

/// The relay for `request`, whose handler is `service`, and the middleware's side of it. The
/// handler's task starts now, and runs `service` only once the contract sends the body.
pub(crate) fn relay<S, B>(service: Rc<S>, request: ServiceRequest) -> (Relay, Held)
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    let shared = Rc::new(RefCell::new(Shared {
        pending: Some(request),
        ..Shared::default()
    }));
    let (body_sender, called) = oneshot::channel();
    let (response_sender, response) = oneshot::channel();
    actix_web::rt::spawn(serve(service, shared.clone(), called, response_sender));
    let relay = Relay {
        body: body_sender,
        response,
    };
    (relay, Held(shared))
}

/// The handler's task: runs `service` on the request once its body comes.
async fn serve<S, B>(
    service: Rc<S>,
    shared: Rc<RefCell<Shared>>,
    called: oneshot::Receiver<Called>,
    response: oneshot::Sender<Result<Response<Body>, HandlerFailed>>,
) where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    // Not called: the contract answered without the handler (a replay, a conflict).
    let Ok(Called { body, call }) = called.await else {
        return;
    };
    let Some(mut request) = shared.borrow_mut().pending.take() else {
        return;
    };
    request.set_payload(Payload::from(body));
    // The service is called inside the call too: middleware inside the layer may act (or
    // send a keyed request) in its `call` before its future is polled.
    let served = async move { service.call(request).await };
    let served = match call {
        Some(call) => call.scope(served).await,
        None => served.await,
    };
    let answered = match served {
        Ok(answered) => {
            let (request, answered) = answered.into_parts();
            shared.borrow_mut().answered = Some(request);
            Ok(head::from_actix(answered))
        }
        Err(error) => {
            shared.borrow_mut().failure = Some(error);
            Err(HandlerFailed)
        }
    };
    let _ = response.send(answered);
}

impl Handler for Relay {
    type Body = Body;
    type Error = HandlerFailed;

    fn call(
        self,
        request: Request<Bytes>,
    ) -> impl Future<Output = Result<Response<Body>, HandlerFailed>> + Send + 'static {
        let Relay { body, response } = self;
        // Called from the engine's body: the call is current here, and goes with the body.
        let called = Called {
            body: request.into_body(),
            call: idem_core::context(),
        };
        let sent = body.send(called).is_ok();
        async move {
            match (sent, response.await) {
                (true, Ok(answered)) => answered,
                // The handler's task ended without an answer: it panicked, or its runtime is
                // shutting down. Either way the handler may have run, as with a tower handler
                // that panics: the panic goes on, and the key is held, not released.
                _ => std::panic::resume_unwind(Box::new(
                    "the actix-web handler ended without an answer",
                )),
            }
        }
    }
}
