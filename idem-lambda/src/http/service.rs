//! The service a `lambda_http` function runs: its handler behind idem-http's
//! `IdempotencyService`, answering what `lambda_http::run` sends back to API Gateway.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http_body_util::BodyExt;
use idem_http::IdempotencyService;
use lambda_http::http::{Response, StatusCode};
use lambda_http::{Body, IntoResponse};
use tower_service::Service;

use super::body;
use super::handler::FunctionHandler;

/// A `lambda_http` handler `S` behind the [`IdempotencyLayer`](idem_http::IdempotencyLayer):
/// what [`LambdaHttpLayer`](super::LambdaHttpLayer) makes of it, for `lambda_http::run`.
///
/// It takes the `lambda_http::Request`s `run` gives, hands `S` the same requests (the body as
/// the event carried it, text or binary; the request context and the Lambda context in the
/// extensions), inside the engine's call, and answers a `Response<lambda_http::Body>`.
#[derive(Clone, Debug)]
pub struct LambdaHttpService<S> {
    inner: IdempotencyService<FunctionHandler<S>>,
}

impl<S> LambdaHttpService<S> {
    pub(crate) fn new(inner: IdempotencyService<FunctionHandler<S>>) -> Self {
        LambdaHttpService { inner }
    }
}

/// The future of [`LambdaHttpService::call`].
pub type LambdaHttpFuture<E> =
    Pin<Box<dyn Future<Output = Result<Response<Body>, E>> + Send + 'static>>;

impl<S> Service<lambda_http::Request> for LambdaHttpService<S>
where
    S: Service<lambda_http::Request> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: IntoResponse,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = LambdaHttpFuture<S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Service::<lambda_http::Request>::poll_ready(&mut self.inner, cx)
    }

    fn call(&mut self, mut request: lambda_http::Request) -> Self::Future {
        let kind = body::BodyKind::of(request.body());
        request.extensions_mut().insert(kind);
        let answer = self.inner.call(request);
        Box::pin(async move {
            let (parts, answer) = answer.await?.into_parts();
            // The layer answers a function's response once it is kept (its length is known
            // up front, so it is never streamed), and its own answers and replays from memory:
            // a body that fails here is not expected, and is answered as what it is.
            let bytes = match answer.collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(error) => return Ok(unreadable_answer(&error)),
            };
            // `lambda_http` makes it text or binary for API Gateway by its `content-type`.
            Ok(Response::from_parts(parts, Body::from(bytes.to_vec())))
        })
    }
}

/// The answer when the layer's response body fails: a 500 that names the error, rather than
/// a truncated body passed off as whole.
fn unreadable_answer(error: &idem_http::BodyError) -> Response<Body> {
    tracing::error!(target: crate::TARGET, %error, "the response body could not be read whole");
    let mut response = Response::new(Body::from(format!(
        "the response could not be read whole: {error}"
    )));
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response
}
