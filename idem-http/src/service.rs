//! The tower `Service` the layer wraps around a handler: read the key, reserve it, run the
//! handler in a task of its own, store and answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::{HeaderMap, Request, Response};
use idem_core::{Call, Executed, ReleaseErrors};
use tower_service::Service;
use tracing::Instrument;

use crate::answer;
use crate::body::{self, Body, BoxError, Read};
use crate::config::{Config, KEY_NAME};
use crate::key_header::{self, KeyHeader};
use crate::stored::StoredResponse;
use crate::{fingerprint, TARGET};

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

/// Why the handler's response is not a stored one. Every case releases the key.
enum Unstored<E> {
    /// The engine refused or failed.
    Engine(idem_core::Error),
    /// The handler's response, which the layer does not store but which must reach the client.
    PassedOn(Response<Body>),
    /// The handler's service failed.
    Inner(E),
    /// The handler's response body failed while it was read.
    BodyFailed(BoxError),
}

impl<E> From<idem_core::Error> for Unstored<E> {
    fn from(error: idem_core::Error) -> Self {
        Unstored::Engine(error)
    }
}

/// Answers one request: passed through, refused by the layer (400, 413), or run under the
/// engine in a task of its own.
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
    if !config.methods.contains(request.method()) {
        return pass_through(inner, request).await;
    }
    let key = match key_header::read(request.headers()) {
        KeyHeader::Present(key) => key,
        KeyHeader::Absent if config.require_key => return Ok(answer::key_missing()),
        KeyHeader::Absent => return pass_through(inner, request).await,
        KeyHeader::Invalid(reason) => {
            let received = key_header::as_received(request.headers());
            return Ok(answer::key_invalid(&received, reason));
        }
    };
    let (parts, body) = request.into_parts();
    let limit = config.max_request_body;
    if content_length(&parts.headers).is_some_and(|len| len > limit as u64) {
        return Ok(answer::body_too_large(&key, limit));
    }
    let bytes = match body::read_up_to(Box::pin(body), limit).await {
        Read::Whole(bytes) => bytes,
        Read::Unbuffered(_) => return Ok(answer::body_too_large(&key, limit)),
        Read::Failed(error) => {
            tracing::debug!(target: TARGET, key, %error, "request body unreadable");
            return Ok(answer::body_unreadable(&key));
        }
    };
    let scope = (config.scope)(&parts);
    let call = match call(&config, &key, scope.as_deref(), &parts, &bytes) {
        Ok(call) => call,
        Err(error) => return Ok(answer::engine_error(&error, &key, config.mismatch)),
    };
    let request = Request::from_parts(parts, body::full(bytes));
    // The handler runs in a task of its own, so that a client that disconnects does not cut
    // it off halfway: it finishes, its response is stored, and the retry gets the replay.
    let run =
        tokio::spawn(run(config.clone(), call, key.clone(), inner, request).in_current_span());
    match run.await {
        Ok(Ok(executed)) => Ok(answer_stored(executed, &key)),
        Ok(Err(Unstored::PassedOn(response))) => Ok(response),
        Ok(Err(Unstored::Inner(error))) => Err(error),
        Ok(Err(Unstored::Engine(error))) => Ok(answer::engine_error(&error, &key, config.mismatch)),
        Ok(Err(Unstored::BodyFailed(error))) => {
            tracing::error!(target: TARGET, key, %error, "the response body failed; the key is released");
            Ok(answer::not_recorded(&key).into_response())
        }
        Err(panicked) => {
            tracing::error!(target: TARGET, key, error = %panicked, "the handler panicked; its key is held until its lease passes");
            Ok(answer::not_recorded(&key).into_response())
        }
    }
}

/// The engine call for a request with `key` in `scope`.
fn call(
    config: &Config,
    key: &str,
    scope: Option<&str>,
    parts: &http::request::Parts,
    body: &[u8],
) -> Result<Call, idem_core::Error> {
    let stored_key = config.idem.key(KEY_NAME).scope(scope).part(key).finish()?;
    let fingerprint = fingerprint::of_request(parts, body, &config.fingerprint_headers)?;
    let mut call = Call::new(stored_key, fingerprint).with_ttl(config.ttl);
    if let Some(wait) = config.wait {
        call = call.with_wait(wait);
    }
    if let Some(lease) = config.lease {
        call = call.with_lease(lease);
    }
    Ok(call)
}

/// Runs the handler under the engine, and keeps its response if the layer stores it.
async fn run<S, ResBody>(
    config: Arc<Config>,
    call: Call,
    key: String,
    mut inner: S,
    request: Request<Body>,
) -> Result<Executed<StoredResponse>, Unstored<S::Error>>
where
    S: Service<Request<Body>, Response = Response<ResBody>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    let idem = config.idem.clone();
    idem.run_with_policy(call, &ReleaseErrors, async {
        let response = inner.call(request).await.map_err(Unstored::Inner)?;
        keep(&config, &key, response).await
    })
    .await
}

/// The response as stored, or as passed on unstored.
async fn keep<E, ResBody>(
    config: &Config,
    key: &str,
    response: Response<ResBody>,
) -> Result<StoredResponse, Unstored<E>>
where
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    let (parts, body) = response.into_parts();
    if !(config.store_when)(parts.status) {
        tracing::debug!(target: TARGET, key, status = parts.status.as_u16(), "status not stored; the key is released");
        return Err(Unstored::PassedOn(Response::from_parts(
            parts,
            body::boxed(body),
        )));
    }
    let limit = config.max_response_body;
    if content_length(&parts.headers).is_some_and(|len| len > limit as u64) {
        tracing::warn!(target: TARGET, key, limit, "response body over the limit passed on unstored; the key is released");
        return Err(Unstored::PassedOn(Response::from_parts(
            parts,
            body::boxed(body),
        )));
    }
    match body::read_up_to(Box::pin(body), limit).await {
        Read::Whole(bytes) => Ok(StoredResponse::capture(
            parts,
            bytes,
            &config.replay_headers,
        )),
        Read::Unbuffered(resumed) => {
            tracing::warn!(target: TARGET, key, limit, "streaming response over the limit or with trailers passed on unstored; the key is released");
            Err(Unstored::PassedOn(Response::from_parts(
                parts,
                body::boxed(resumed),
            )))
        }
        Read::Failed(error) => Err(Unstored::BodyFailed(error)),
    }
}

fn answer_stored(executed: Executed<StoredResponse>, key: &str) -> Response<Body> {
    match executed.value.into_response(executed.replayed) {
        Ok(response) => response,
        Err(reason) => {
            tracing::error!(target: TARGET, key, reason, "the stored response cannot be replayed");
            answer::engine_error(
                &idem_core::Error::CorruptRecord {
                    key: key.to_owned(),
                    reason,
                },
                key,
                Default::default(),
            )
        }
    }
}

async fn pass_through<S, ReqBody, ResBody>(
    mut inner: S,
    request: Request<ReqBody>,
) -> Result<Response<Body>, S::Error>
where
    S: Service<Request<Body>, Response = Response<ResBody>>,
    ReqBody: http_body::Body<Data = Bytes> + Send + 'static,
    ReqBody::Error: Into<BoxError>,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    let response = inner.call(request.map(body::boxed)).await?;
    Ok(response.map(body::boxed))
}

fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}
