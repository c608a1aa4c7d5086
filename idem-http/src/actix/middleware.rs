//! The actix-web `Service` the layer wraps around an app or scope.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform};

use crate::actix::payload::PayloadBody;
use crate::actix::relay::{self, HandlerFailed};
use crate::actix::{discard, head};
use crate::config::{Config, ScopeMissing};
use crate::contract::{self, Admission, BodyRead};
use crate::layer::IdempotencyLayer;
use crate::telemetry::{Counted, RequestOutcome};

/// The middleware [`IdempotencyLayer`] makes around an actix-web service `S`, as its tower
/// layer makes [`IdempotencyService`](crate::IdempotencyService).
pub struct IdempotencyMiddleware<S> {
    service: Rc<S>,
    config: Arc<Config>,
}

impl<S, B> Transform<S, ServiceRequest> for IdempotencyLayer
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = actix_web::Error;
    type Transform = IdempotencyMiddleware<S>;
    type InitError = ();
    type Future = std::future::Ready<Result<IdempotencyMiddleware<S>, ()>>;

    fn new_transform(&self, service: S) -> Self::Future {
        std::future::ready(Ok(IdempotencyMiddleware {
            service: Rc::new(service),
            config: self.config.clone(),
        }))
    }
}

type Answer = Result<ServiceResponse<BoxBody>, actix_web::Error>;

impl<S, B> Service<ServiceRequest> for IdempotencyMiddleware<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Answer>>>;

    actix_web::dev::forward_ready!(service);

    fn call(&self, request: ServiceRequest) -> Self::Future {
        let (config, service) = (self.config.clone(), self.service.clone());
        Box::pin(async move {
            // Counted when dropped: a request whose client went away counts too.
            let mut counted = Counted::new();
            let (outcome, answer) = answer(config, service, request).await;
            counted.set(outcome);
            answer
        })
    }
}

/// Answers one request: passed through, refused by the layer, or run under the engine.
async fn answer<S, B>(
    config: Arc<Config>,
    service: Rc<S>,
    mut request: ServiceRequest,
) -> (RequestOutcome, Answer)
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    use RequestOutcome::PassedThrough;
    let Some(parts) = head::parts_of(request.head()) else {
        return (PassedThrough, pass_through(&service, request).await);
    };
    let admission = contract::admit(&config, &parts, |parts| match &config.actix_scope {
        Some(read) => read(request.request()),
        None if config.scope_is_default => (config.scope)(parts),
        // The closure would find no extension and take the request for an anonymous one.
        None => Err(ScopeMissing::ActixExtensionsUnseen),
    });
    let keyed = match admission {
        Admission::Keyed(keyed) => keyed,
        Admission::Refused(outcome, answer) => {
            let mut payload = PayloadBody(request.parts_mut().1.take());
            discard::discard_small(&mut payload, &parts.headers).await;
            return (outcome, Ok(request.into_response(head::to_actix(answer))));
        }
        Admission::PassThrough => return (PassedThrough, pass_through(&service, request).await),
    };
    let mut payload = PayloadBody(request.parts_mut().1.take());
    let bytes = match contract::read_body(&config, &keyed, &parts.headers, &mut payload).await {
        BodyRead::Whole(bytes) => bytes,
        BodyRead::Refused(outcome, answer) => {
            discard::discard_small(&mut payload, &parts.headers).await;
            return (outcome, Ok(request.into_response(head::to_actix(answer))));
        }
    };
    let (relay, held) = relay::relay(service, request);
    let (outcome, answered) = contract::execute(config, keyed, parts, bytes, relay).await;
    let answer = match answered {
        Ok(response) => held.respond(head::to_actix(response)),
        Err(HandlerFailed) => Err(held.failure()),
    };
    (outcome, answer)
}

async fn pass_through<S, B>(service: &S, request: ServiceRequest) -> Answer
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody + 'static,
{
    let response = service.call(request).await?;
    Ok(response.map_into_boxed_body())
}
