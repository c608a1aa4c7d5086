//! The tower `Service` the layer wraps around a handler: the front end of the
//! contract for tower's request and response types.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use tower_service::Service;

use crate::body::{self, Body, BoxError};
use crate::config::Config;
use crate::contract::{self, Admission, BodyRead, Handler};
use crate::telemetry::{Counted, RequestOutcome};

/// The service made by [`IdempotencyLayer`](crate::IdempotencyLayer) around `S`.
///
/// It hands `S` requests whose body is [`Body`], and answers with [`Body`] too.
#[derive(Clone, Debug)]
pub struct IdempotencyService<S> {
    pub(crate) inner: S,
    pub(crate) config: Arc<Config>,
}

/// The future of [`IdempotencyService::call`].
pub type ResponseFuture<E> = Pin<Box<dyn Future<Output = Result<Response<Body>, E>> + Send>>;

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for IdempotencyService<S>
where
    S: Service<Request<Body>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqBody: http_body::Body<Data = Bytes> + Send + 'static,
    ReqBody::Error: Into<BoxError>,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        // The clone that was driven to readiness is the one that must serve this request.
        let ready = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, ready);
        Box::pin(handle(self.config.clone(), inner, request))
    }
}

/// Answers one request, and counts what became of it.
async fn handle<S, ReqBody, ResBody>(
    config: Arc<Config>,
    inner: S,
    request: Request<ReqBody>,
) -> Result<Response<Body>, S::Error>
where
    S: Service<Request<Body>, Response = Response<ResBody>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqBody: http_body::Body<Data = Bytes> + Send + 'static,
    ReqBody::Error: Into<BoxError>,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    // Counted when dropped: a request whose client went away before its answer counts too.
    let mut counted = Counted::new();
    let (outcome, answer) = answer(config, inner, request).await;
    counted.set(outcome);
    answer
}

/// Answers one request: passed through, refused by the layer, or run under the engine.
async fn answer<S, ReqBody, ResBody>(
    config: Arc<Config>,
    inner: S,
    request: Request<ReqBody>,
) -> (RequestOutcome, Result<Response<Body>, S::Error>)
where
    S: Service<Request<Body>, Response = Response<ResBody>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqBody: http_body::Body<Data = Bytes> + Send + 'static,
    ReqBody::Error: Into<BoxError>,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    use RequestOutcome::PassedThrough;
    let (parts, body) = request.into_parts();
    let keyed = match contract::admit(&config, &parts, |parts| (config.scope)(parts)) {
        Admission::Keyed(keyed) => keyed,
        Admission::Refused(outcome, answer) => return (outcome, Ok(answer)),
        Admission::PassThrough => {
            let request = Request::from_parts(parts, body::boxed(body));
            return (PassedThrough, pass_through(inner, request).await);
        }
    };
    let bytes = match contract::read_body(&config, &keyed, &parts.headers, Box::pin(body)).await {
        BodyRead::Whole(bytes) => bytes,
        BodyRead::Refused(outcome, answer) => return (outcome, Ok(answer)),
    };
    contract::execute(config, keyed, parts, bytes, TowerHandler(inner)).await
}

/// A tower service as the contract's handler.
struct TowerHandler<S>(S);

impl<S, ResBody> Handler for TowerHandler<S>
where
    S: Service<Request<Body>, Response = Response<ResBody>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    type Body = ResBody;
    type Error = S::Error;

    fn call(
        self,
        request: Request<Bytes>,
    ) -> impl std::future::Future<Output = Result<Response<ResBody>, S::Error>> + Send + 'static
    {
        let TowerHandler(mut inner) = self;
        inner.call(request.map(body::full))
    }
}

async fn pass_through<S, ResBody>(
    mut inner: S,
    request: Request<Body>,
) -> Result<Response<Body>, S::Error>
where
    S: Service<Request<Body>, Response = Response<ResBody>>,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    let response = inner.call(request).await?;
    Ok(response.map(body::boxed))
}
