//! The salvo `Handler` the layer is: a hoop that runs the rest of the chain under the engine.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{Request, Response};
use http_body::Body as _;
use http_body_util::BodyExt;
use salvo_core::http::{ReqBody, ResBody};
use salvo_core::{Depot, FlowCtrl};

use crate::answer;
use crate::body::Body;
use crate::config::Config;
use crate::contract::{self, Admission, BodyRead, Handler};
use crate::layer::IdempotencyLayer;
use crate::telemetry::{Counted, RequestOutcome};
use crate::TARGET;

#[salvo_core::async_trait]
impl salvo_core::Handler for IdempotencyLayer {
    async fn handle(
        &self,
        request: &mut salvo_core::Request,
        depot: &mut Depot,
        response: &mut salvo_core::Response,
        ctrl: &mut FlowCtrl,
    ) {
        // Counted when dropped: a request whose client went away before its answer counts too.
        let mut counted = Counted::new();
        let chain = Chain {
            request,
            depot,
            response,
            ctrl,
        };
        counted.set(answer(self.config.clone(), chain).await);
    }
}

/// What a hoop is handed: the request, the depot, the response so far, and the rest of the
/// chain.
struct Chain<'a> {
    request: &'a mut salvo_core::Request,
    depot: &'a mut Depot,
    response: &'a mut salvo_core::Response,
    ctrl: &'a mut FlowCtrl,
}

/// Answers one request: passed through, refused by the layer, or run under the engine.
async fn answer(config: Arc<Config>, chain: Chain<'_>) -> RequestOutcome {
    use RequestOutcome::PassedThrough;
    let mut parts = head_of(chain.request);
    let admission = contract::admit(&config, &parts, |parts| (config.scope)(parts));
    *chain.request.extensions_mut() = std::mem::take(&mut parts.extensions);
    let keyed = match admission {
        Admission::Keyed(keyed) => keyed,
        Admission::Refused(outcome, answer) => {
            answer_with(chain.response, answer);
            chain.ctrl.skip_rest();
            return outcome;
        }
        Admission::PassThrough => {
            chain
                .ctrl
                .call_next(chain.request, chain.depot, chain.response)
                .await;
            return PassedThrough;
        }
    };
    let Some(body) = body_of(chain.request).await else {
        tracing::error!(target: TARGET, key = config.logged_key(&keyed.key), "a hoop before the idempotency layer read the request body without keeping it (as `form_data` does); hoop the layer before it");
        answer_with(
            chain.response,
            keyed.asked.render(answer::failed(&keyed.key)),
        );
        chain.ctrl.skip_rest();
        return RequestOutcome::Failed;
    };
    let bytes = match contract::read_body(&config, &keyed, &parts.headers, body).await {
        BodyRead::Whole(bytes) => bytes,
        BodyRead::Refused(outcome, answer) => {
            answer_with(chain.response, answer);
            chain.ctrl.skip_rest();
            return outcome;
        }
    };
    // The rest of the chain must own what it works on, to finish in a task of its own once
    // the client is gone; it leaves it here when it ends, for this hoop to put back.
    let moved = Arc::new(Mutex::new(Some(Moved {
        request: std::mem::take(chain.request),
        depot: std::mem::take(chain.depot),
        response: std::mem::take(chain.response),
        ctrl: std::mem::take(chain.ctrl),
    })));
    let rest = Rest(moved.clone());
    let (outcome, answered) = contract::execute(config, keyed, parts, bytes, rest).await;
    let left = moved.lock().unwrap_or_else(PoisonError::into_inner).take();
    // Put back when the chain ended (or panicked), or never taken (a replay, a conflict).
    if let Some(left) = left {
        *chain.request = left.request;
        *chain.depot = left.depot;
        *chain.response = left.response;
        *chain.ctrl = left.ctrl;
    }
    // On `Err(ChainFailed)` the response holds the chain's error as the chain left it, for
    // salvo's catcher.
    if let Ok(answer) = answered {
        answer_with(chain.response, answer);
    }
    // A replay or a conflict: the handlers behind the hoop must not run.
    chain.ctrl.skip_rest();
    outcome
}

/// The request's head as the contract reads it, with the request's extensions (taken from
/// it until the scope is read).
fn head_of(request: &mut salvo_core::Request) -> http::request::Parts {
    let (mut parts, ()) = Request::new(()).into_parts();
    parts.method = request.method().clone();
    parts.uri = request.uri().clone();
    parts.version = request.version();
    parts.headers = request.headers().clone();
    parts.extensions = std::mem::take(request.extensions_mut());
    parts
}

/// The request's body; one a hoop before this one read already is the payload salvo kept.
/// `None` when a hoop read a body it did not keep as the payload (a form it parsed): the
/// layer would take it for an empty one, and the handler would get none.
async fn body_of(request: &mut salvo_core::Request) -> Option<ReqBody> {
    if !request.body().is_none() {
        return Some(request.take_body());
    }
    let headers = request.headers();
    let declared = headers.contains_key(TRANSFER_ENCODING)
        || headers
            .get(CONTENT_LENGTH)
            .is_some_and(|length| length != "0");
    match request.payload().await {
        Ok(payload) if payload.is_empty() && declared => None,
        Ok(payload) => Some(ReqBody::Once(payload.clone())),
        Err(_) => None,
    }
}

/// Writes the layer's answer on salvo's response: its status, its headers (over those of the
/// same name the response had) and its body. An error status with an empty body leaves the
/// body unset, so that salvo's catcher writes its page, to the first answer and to every
/// replay alike.
fn answer_with(response: &mut salvo_core::Response, answer: Response<Body>) {
    let (parts, body) = answer.into_parts();
    response.status_code = Some(parts.status);
    let headers = response.headers_mut();
    for name in parts.headers.keys() {
        headers.remove(name);
    }
    for (name, value) in parts.headers.iter() {
        headers.append(name, value.clone());
    }
    response.extensions.extend(parts.extensions);
    let error = parts.status.is_client_error() || parts.status.is_server_error();
    response.body = if error && body.size_hint().exact() == Some(0) {
        ResBody::None
    } else {
        ResBody::Boxed(Box::pin(body.map_err(Into::into)))
    };
}

/// What the rest of the chain works on, moved out of the hoop's borrows.
struct Moved {
    request: salvo_core::Request,
    depot: Depot,
    response: salvo_core::Response,
    ctrl: FlowCtrl,
}

/// The rest of the chain as the contract's handler.
struct Rest(Arc<Mutex<Option<Moved>>>);

/// What the chain works on, put back in its slot when dropped: when the chain ends, and when
/// it panics.
struct PutBack {
    slot: Arc<Mutex<Option<Moved>>>,
    moved: Option<Moved>,
}

impl Drop for PutBack {
    fn drop(&mut self) {
        if let Some(moved) = self.moved.take() {
            *self.slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(moved);
        }
    }
}

/// The chain failed after it began: it left salvo's error with a server-error status (a
/// `StatusError` rendered, by a timeout hoop say) on the response.
struct ChainFailed;

impl Handler for Rest {
    type Body = ResBody;
    type Error = ChainFailed;

    fn call(
        self,
        request: Request<Bytes>,
    ) -> impl std::future::Future<Output = Result<Response<ResBody>, Self::Error>> + Send + 'static
    {
        let Rest(slot) = self;
        let bytes = request.into_body();
        async move {
            let moved = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
            let Some(moved) = moved else {
                unreachable!("the rest of a salvo chain is run once")
            };
            // Put back however the chain ends, a panic included, for the hoops before this
            // one to find the request, depot and response they handed on.
            let mut guard = PutBack {
                slot,
                moved: Some(moved),
            };
            let Some(Moved {
                request,
                depot,
                response,
                ctrl,
            }) = guard.moved.as_mut()
            else {
                unreachable!("the guard holds what it puts back")
            };
            request.replace_body(ReqBody::Once(bytes));
            ctrl.call_next(request, depot, response).await;
            let failed =
                matches!(&response.body, ResBody::Error(error) if error.code.is_server_error());
            let answered = (!failed).then(|| response.strip_to_hyper());
            drop(guard);
            answered.ok_or(ChainFailed)
        }
    }
}
