//! The function's own service behind the layer: handed the request the layer passes on
//! (`idem_http::Body`) as the `lambda_http::Request` it was written for, its answer (anything
//! `lambda_http` takes, `IntoResponse`) made the response the layer keeps.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http_body_util::BodyExt;
use lambda_http::http::{Request, Response, StatusCode};
use lambda_http::{Body, IntoResponse};
use tower_service::Service;

use super::body;

/// `S`, a service of `lambda_http::Request`s, as the service of `idem_http::Body` requests
/// that [`IdempotencyLayer`](idem_http::IdempotencyLayer) wraps.
#[derive(Clone, Debug)]
pub(crate) struct FunctionHandler<S> {
    inner: S,
}

impl<S> FunctionHandler<S> {
    pub(crate) fn new(inner: S) -> Self {
        FunctionHandler { inner }
    }
}

/// The future of [`FunctionHandler::call`].
pub(crate) type HandlerFuture<E> =
    Pin<Box<dyn Future<Output = Result<Response<Body>, E>> + Send + 'static>>;

impl<S> Service<Request<idem_http::Body>> for FunctionHandler<S>
where
    S: Service<lambda_http::Request> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: IntoResponse,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = HandlerFuture<S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<idem_http::Body>) -> Self::Future {
        // The clone that was driven to readiness is the one that must serve this request.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        Box::pin(async move {
            let (mut parts, bytes) = request.into_parts();
            // The layer hands on a body held in memory (the event's, or the bytes it read),
            // which cannot fail; were it to, the handler does not run and the answer says why.
            let bytes = match bytes.collect().await {
                Ok(collected) => collected.to_bytes().to_vec(),
                Err(error) => return Ok(unreadable_body(&error)),
            };
            let body = body::restore(&mut parts.extensions, bytes);
            let answer = inner.call(Request::from_parts(parts, body)).await?;
            Ok(answer.into_response().await)
        })
    }
}

/// The answer to a request whose body could not be read: a 500 that names the error, which
/// releases the key (nothing ran).
fn unreadable_body(error: &idem_http::BodyError) -> Response<Body> {
    tracing::error!(target: crate::TARGET, %error, "the request body could not be read");
    let mut response = Response::new(Body::from(format!(
        "the request body could not be read: {error}"
    )));
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response
}
