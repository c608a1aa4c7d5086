//! The poem `Endpoint` the layer makes around an endpoint: the front end of the contract for
//! poem's request and response types.

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::combinators::BoxBody;
use http_body_util::BodyExt;
use poem::{Endpoint, IntoResponse, Middleware, RequestParts};

use crate::body::Body;
use crate::config::Config;
use crate::contract::{self, Admission, BodyRead, Handler};
use crate::layer::IdempotencyLayer;
use crate::telemetry::{Counted, RequestOutcome};

/// The endpoint [`IdempotencyLayer`] makes around a poem endpoint `E`, as its tower layer makes
/// [`IdempotencyService`](crate::IdempotencyService): `Route::new().at(..).with(layer)`.
pub struct IdempotencyEndpoint<E> {
    inner: Arc<E>,
    config: Arc<Config>,
}

impl<E: Endpoint + 'static> Middleware<E> for IdempotencyLayer {
    type Output = IdempotencyEndpoint<E>;

    fn transform(&self, inner: E) -> IdempotencyEndpoint<E> {
        IdempotencyEndpoint {
            inner: Arc::new(inner),
            config: self.config.clone(),
        }
    }
}

impl<E: Endpoint + 'static> Endpoint for IdempotencyEndpoint<E> {
    type Output = poem::Response;

    async fn call(&self, request: poem::Request) -> poem::Result<poem::Response> {
        // Counted when dropped: a request whose client went away before its answer counts too.
        let mut counted = Counted::new();
        let (outcome, answer) = answer(self.config.clone(), self.inner.clone(), request).await;
        counted.set(outcome);
        answer
    }
}

/// Answers one request: passed through, refused by the layer, or run under the engine.
async fn answer<E: Endpoint + 'static>(
    config: Arc<Config>,
    inner: Arc<E>,
    request: poem::Request,
) -> (RequestOutcome, poem::Result<poem::Response>) {
    use RequestOutcome::PassedThrough;
    let (mut own, body) = request.into_parts();
    let parts = head_of(&mut own);
    let keyed = match contract::admit(&config, &parts, |parts| (config.scope)(parts)) {
        Admission::Keyed(keyed) => keyed,
        Admission::Refused(outcome, answer) => return (outcome, Ok(to_poem(answer))),
        Admission::PassThrough => {
            let request = rebuild(own, parts, body);
            return (PassedThrough, pass_through(&inner, request).await);
        }
    };
    let body = BoxBody::from(body);
    let bytes = match contract::read_body(&config, &keyed, &parts.headers, body).await {
        BodyRead::Whole(bytes) => bytes,
        BodyRead::Refused(outcome, answer) => return (outcome, Ok(to_poem(answer))),
    };
    let handler = PoemHandler { inner, own };
    let (outcome, answered) = contract::execute(config, keyed, parts, bytes, handler).await;
    (outcome, answered.map(to_poem))
}

/// The head of `own` as the contract reads it, extensions included; `own` keeps what poem
/// alone knows of the request (its addresses, scheme and path parameters).
fn head_of(own: &mut RequestParts) -> http::request::Parts {
    let (mut parts, ()) = Request::new(()).into_parts();
    parts.method = std::mem::take(&mut own.method);
    parts.uri = std::mem::take(&mut own.uri);
    parts.version = own.version;
    parts.headers = std::mem::take(&mut own.headers);
    parts.extensions = std::mem::take(&mut own.extensions);
    parts
}

/// The poem request with the head `parts` (as the contract hands it on) and what `own` kept.
fn rebuild(mut own: RequestParts, parts: http::request::Parts, body: poem::Body) -> poem::Request {
    own.method = parts.method;
    own.uri = parts.uri;
    own.version = parts.version;
    own.headers = parts.headers;
    own.extensions = parts.extensions;
    poem::Request::from_parts(own, body)
}

/// The layer's response as poem sends it, its body boxed as poem boxes its own: poem's
/// `From<http::Response<_>>` maps each frame, which drops the body's size hint, and a body of
/// known length would go out chunked instead of with its `Content-Length`.
fn to_poem(response: Response<Body>) -> poem::Response {
    let (parts, body) = response.into_parts();
    let body = BoxBody::new(body.map_err(std::io::Error::other));
    let parts = poem::ResponseParts {
        status: parts.status,
        version: parts.version,
        headers: parts.headers,
        extensions: parts.extensions,
    };
    poem::Response::from_parts(parts, poem::Body::from(body))
}

async fn pass_through<E: Endpoint>(
    inner: &E,
    request: poem::Request,
) -> poem::Result<poem::Response> {
    inner.call(request).await.map(IntoResponse::into_response)
}

/// A poem endpoint as the contract's handler. An error with a server-error status (a
/// middleware's timeout, a failure after the endpoint began) is the service's error, and keeps
/// the key as handled; any other is judged as the response poem renders for it (an extractor's
/// 400, a 404), as a tower handler's answer is.
struct PoemHandler<E> {
    inner: Arc<E>,
    own: RequestParts,
}

impl<E: Endpoint + 'static> Handler for PoemHandler<E> {
    type Body = BoxBody<Bytes, std::io::Error>;
    type Error = poem::Error;

    fn call(
        self,
        request: Request<Bytes>,
    ) -> impl std::future::Future<Output = Result<Response<Self::Body>, Self::Error>> + Send + 'static
    {
        let PoemHandler { inner, own } = self;
        let (parts, bytes) = request.into_parts();
        let request = rebuild(own, parts, poem::Body::from(bytes));
        async move {
            let response = match inner.call(request).await {
                Ok(output) => output.into_response(),
                Err(error) if error.status().is_server_error() => return Err(error),
                Err(error) => error.into_response(),
            };
            Ok(Response::from(response))
        }
    }
}
