//! The tower `Service` the layer wraps around a handler: read the key, reserve it, run the
//! handler (in a task of its own once its client is gone), store and answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body::Body as _;
use idem_core::{Answered, Call, ReleaseErrors};
use idem_protocol::scope::effective;
use tokio::sync::oneshot;
use tower_service::Service;
use tracing::Instrument;

use crate::answer;
use crate::asked::{answer_stored, Asked};
use crate::body::{self, Body, BoxError, PanicsAsErrors, Read};
use crate::config::Config;
use crate::detached::{self, Detached};
use crate::request::key_header::{self, KeyHeader};
use crate::request::{fingerprint, scope::Unscoped};
use crate::response::forward::{self, Ending, Tail};
use crate::response::stored::{self, NotKept, StoredResponse};
use crate::telemetry::RequestOutcome;
use crate::{grpc, TARGET};

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

/// Why the handler's run ended without a response to store. Every case but `Engine` releases
/// the key (or keeps it for the same request only, when a step was recorded); an engine error
/// says itself what became of it.
enum Unstored<E> {
    /// The engine refused or failed.
    Engine(idem_core::Error),
    /// The handler's response, whose status is not stored: it reaches the client once the key
    /// is released, so that the client's retry finds the key free.
    PassedOn(Response<Body>),
    /// A streamed response whose status, known at its end, is not stored; the client has all
    /// but its end, which comes once the key is released.
    Released,
    /// The handler's service failed.
    Inner(E),
}

impl<E> From<idem_core::Error> for Unstored<E> {
    fn from(error: idem_core::Error) -> Self {
        Unstored::Engine(error)
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
    let mut counted = CountOnDrop(RequestOutcome::Disconnected);
    let (outcome, answer) = answer(config, inner, request).await;
    counted.0 = outcome;
    answer
}

/// Counts its outcome in `idem_http_requests_total` when dropped.
struct CountOnDrop(RequestOutcome);

impl Drop for CountOnDrop {
    fn drop(&mut self) {
        self.0.count();
    }
}

/// Answers one request: passed through, refused by the layer (400, 413, or 500 for a missing
/// scope), or run under the engine.
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
    use RequestOutcome::*;
    if !config.methods.contains(request.method()) {
        return (PassedThrough, pass_through(inner, request).await);
    }
    let asked = Asked::of(request.headers());
    let key = match key_header::read(request.headers()) {
        KeyHeader::Present(key) => key,
        KeyHeader::Absent if config.require_key => {
            return (KeyRefused, Ok(asked.render(answer::key_missing())))
        }
        KeyHeader::Absent => return (PassedThrough, pass_through(inner, request).await),
        KeyHeader::Invalid(reason) => {
            let received = key_header::as_received(request.headers());
            return (
                KeyRefused,
                Ok(asked.render(answer::key_invalid(&received, reason))),
            );
        }
    };
    let (parts, body) = request.into_parts();
    // Whose key it is needs only the head: a request refused, or passed through, for want of
    // a scope is not read first.
    let scope = match (config.scope)(&parts) {
        // An empty principal is no principal: it would share one scope among all who gave it.
        Ok(scope) => match (effective(scope.as_deref()), &config.scope_secret) {
            (None, _) => None,
            (Some(scope), Some(secret)) => Some(secret.keyed(scope)),
            (Some(_), None) => scope,
        },
        Err(missing) => {
            tracing::error!(target: TARGET, key = config.logged_key(&key), extension = missing.0, "the request lacks the extension the scope is taken from");
            return (
                ScopeRefused,
                Ok(asked.render(answer::scope_missing(&key, &missing))),
            );
        }
    };
    if scope.is_none() {
        match config.unscoped {
            Unscoped::Refused => {
                tracing::debug!(target: TARGET, key = config.logged_key(&key), "keyed request without a scope refused");
                return (ScopeRefused, Ok(asked.render(answer::unscoped(&key))));
            }
            Unscoped::PassedThrough => {
                tracing::debug!(target: TARGET, key = config.logged_key(&key), "keyed request without a scope passed through");
                let request = Request::from_parts(parts, body);
                return (PassedThrough, pass_through(inner, request).await);
            }
            Unscoped::Shared => {}
        }
    }
    let limit = config.max_request_body;
    if content_length(&parts.headers).is_some_and(|len| len > limit as u64) {
        return (
            TooLarge,
            Ok(asked.render(answer::body_too_large(&key, limit))),
        );
    }
    let bytes = match body::read_up_to(Box::pin(body), limit).await {
        Read::Whole(bytes) => bytes,
        Read::Unbuffered(_) => {
            return (
                TooLarge,
                Ok(asked.render(answer::body_too_large(&key, limit))),
            )
        }
        Read::Failed(error) => {
            tracing::debug!(target: TARGET, key = config.logged_key(&key), %error, "request body unreadable");
            return (Unreadable, Ok(asked.render(answer::body_unreadable(&key))));
        }
    };
    if asked.grpc && grpc::message_count(&bytes) != Some(1) {
        // A client-streaming call, not one request: there is nothing to replay it with.
        tracing::debug!(target: TARGET, key = config.logged_key(&key), "gRPC call with other than one request message passed through");
        let request = Request::from_parts(parts, body::full(bytes));
        return (PassedThrough, pass_through(inner, request).await);
    }
    let call = match call(&config, &key, scope.as_deref(), &parts, &bytes) {
        Ok(call) => call,
        Err(error) => {
            let answer = asked.render(answer::engine_error(&error, &key, &config));
            return (RequestOutcome::of(&error), Ok(answer));
        }
    };
    // Duplicates that wait for the first request hold its body, not a copy each.
    let (bytes, _shared) = config.bodies.share(*call.fingerprint(), bytes);
    let request = Request::from_parts(parts, body::full(bytes));
    // The call runs in this task; if the client disconnects before it ends, it finishes in a
    // task of its own, so that the handler is not cut off halfway: its response is stored,
    // and the retry gets the replay (a streamed body, though, is read on only while it can
    // still be kept).
    let (head_sender, mut head) = oneshot::channel();
    let mut run = Detached::new(
        run(
            config.clone(),
            call,
            key.clone(),
            inner,
            request,
            head_sender,
        )
        .in_current_span(),
    );
    // A streamed response is handed over as soon as its head is there; the call goes on
    // forwarding its body in a task of its own once `run` is dropped.
    let mut head_open = true;
    let ran = std::future::poll_fn(|cx| {
        if let Poll::Ready(ran) = Pin::new(&mut run).poll(cx) {
            // A streamed response whose body ended in this same poll: its head, sent first,
            // is the answer, as when the call goes on in a task of its own.
            if let (true, Ok(response)) = (head_open, head.try_recv()) {
                return Poll::Ready(Err(response));
            }
            return Poll::Ready(Ok(ran));
        }
        if head_open {
            match Pin::new(&mut head).poll(cx) {
                Poll::Ready(Ok(response)) => return Poll::Ready(Err(response)),
                // The response is not streamed: `run` ends with it.
                Poll::Ready(Err(_)) => head_open = false,
                Poll::Pending => {}
            }
        }
        Poll::Pending
    })
    .await;
    let ran = match ran {
        Ok(ran) => ran,
        Err(streamed) => return (Streamed, Ok(streamed)),
    };
    match ran {
        Ok(Ok(executed)) => {
            let outcome = if executed.replayed {
                Replayed
            } else {
                Executed
            };
            (outcome, Ok(answer_stored(executed, &key, &asked, &config)))
        }
        Ok(Err(Unstored::PassedOn(response))) => (NotStored, Ok(response)),
        Ok(Err(Unstored::Inner(error))) => (Failed, Err(error)),
        Ok(Err(Unstored::Engine(error))) => {
            let answer = asked.render(answer::engine_error(&error, &key, &config));
            (RequestOutcome::of(&error), Ok(answer))
        }
        Ok(Err(Unstored::Released)) => (NotStored, Ok(asked.render(answer::failed(&key)))),
        Err(panicked) => {
            let error = detached::message(&panicked);
            tracing::error!(target: TARGET, key = config.logged_key(&key), error, "the handler panicked; its key is held until its lease passes");
            (NotRecorded, Ok(asked.render(answer::not_recorded(&key))))
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
    let stored_key = config
        .idem
        .key(&config.name)
        .scope(scope)
        .part(key)
        .finish()?;
    let fingerprint = fingerprint::of_request(parts, body, &config.fingerprint_headers)?;
    let mut call = Call::new(stored_key, fingerprint)
        .with_ttl(config.ttl)
        .with_max_outcome(stored::max_stored_len(config.max_response_body));
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
    head: oneshot::Sender<Response<Body>>,
) -> Result<Answered<StoredResponse>, Unstored<S::Error>>
where
    S: Service<Request<Body>, Response = Response<ResBody>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    let idem = config.idem.clone();
    let mut tail = Tail::default();
    let outcome = idem
        .run_with_policy(call, &ReleaseErrors, async {
            let response = inner.call(request).await.map_err(Unstored::Inner)?;
            keep(&config, &key, response, head, &mut tail).await
        })
        .await;
    let settled = matches!(outcome, Ok(_) | Err(Unstored::Released));
    tail.finish(settled, config.abandoned_stream_timeout).await;
    outcome
}

/// The response as stored. A response of known length within the limit is read whole and
/// answered once stored; any other is handed to the client through `head` at once, and its
/// body streamed.
async fn keep<E, ResBody>(
    config: &Config,
    key: &str,
    response: Response<ResBody>,
    mut head: oneshot::Sender<Response<Body>>,
    tail: &mut Tail,
) -> Result<StoredResponse, Unstored<E>>
where
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    let (parts, body) = response.into_parts();
    // The handler has answered: a panic while its body is read must not leave the key held,
    // for a retry to take over and run it again once the lease passes.
    let body = PanicsAsErrors(Box::pin(body));
    // A gRPC answer's status is in its trailers, so it is judged when its body ends; but for a
    // trailers-only answer (every error tonic sends), it is in the head already.
    let judged = if !grpc::is_grpc(&parts.headers) {
        Some(parts.status)
    } else if body.is_end_stream() {
        grpc::judged(&parts.headers, None)
    } else {
        None
    };
    if let Some(status) = judged.filter(|&status| !(config.store_when)(status)) {
        tracing::debug!(target: TARGET, key = config.logged_key(key), status = status.as_u16(), "status not stored; the key is released");
        return Err(Unstored::PassedOn(Response::from_parts(
            parts,
            body::boxed(body),
        )));
    }
    let limit = config.max_response_body as u64;
    let declared = content_length(&parts.headers);
    let known = body.size_hint().exact().or(declared);
    let buffered = judged.is_some()
        && known.is_some_and(|len| len <= limit)
        && declared.is_none_or(|len| len <= limit);
    if !buffered {
        return stream(config, key, parts, body::boxed(body), head, tail).await;
    }
    let read = body::read_up_to(body, config.max_response_body);
    tokio::pin!(read);
    let read = tokio::select! {
        read = &mut read => read,
        // The client went away: the body is read on for a while, so the retry can have it.
        () = head.closed() => match tokio::time::timeout(config.abandoned_stream_timeout, read).await {
            Ok(read) => read,
            Err(_) => {
                tracing::warn!(target: TARGET, key = config.logged_key(key), "the response body stalled after its client went away; the request is kept as handled, its response not kept");
                return Ok(StoredResponse::not_kept(
                    parts.status,
                    &parts.headers,
                    NotKept::Abandoned,
                    &config.replay_headers,
                ));
            }
        },
    };
    match read {
        Read::Whole(bytes) => Ok(StoredResponse::capture(
            parts,
            bytes,
            &config.replay_headers,
        )),
        Read::Unbuffered(resumed) => {
            stream(config, key, parts, body::boxed(resumed), head, tail).await
        }
        Read::Failed(error) => {
            tracing::error!(target: TARGET, key = config.logged_key(key), %error, "the response body failed; the request is kept as handled, its response not kept");
            Ok(StoredResponse::not_kept(
                parts.status,
                &parts.headers,
                NotKept::Failed,
                &config.replay_headers,
            ))
        }
    }
}

/// Hands the head to the client and forwards the body as it comes, keeping a copy; stores it
/// if it ends within the limit, and keeps the key as handled otherwise.
async fn stream<E>(
    config: &Config,
    key: &str,
    parts: http::response::Parts,
    body: Body,
    head: oneshot::Sender<Response<Body>>,
    tail: &mut Tail,
) -> Result<StoredResponse, Unstored<E>> {
    let status = parts.status;
    let headers = parts.headers.clone();
    let (forwarder, forwarded) = forward::channel();
    let _ = head.send(Response::from_parts(parts, body::boxed(forwarded)));
    let limit = config.max_response_body;
    let timeout = config.abandoned_stream_timeout;
    let ending = forward::forward(body, forwarder, limit, timeout, tail).await;
    // A gRPC answer is judged by the status in its trailers, now they are known; one that says
    // "try again" releases its key even if its body was not kept, and one that ended without
    // a status is an `UNKNOWN` failure.
    let judged = match (grpc::is_grpc(&headers), &ending) {
        (false, _) => Some(status),
        (true, Ending::Whole(_)) => Some(
            grpc::judged(&headers, tail.trailers.as_ref())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        ),
        (true, Ending::NotKept(_)) => grpc::judged(&headers, tail.trailers.as_ref()),
    };
    if let Some(judged) = judged.filter(|&judged| !(config.store_when)(judged)) {
        tracing::debug!(target: TARGET, key = config.logged_key(key), status = judged.as_u16(), "status not stored; the key is released");
        return Err(Unstored::Released);
    }
    match ending {
        Ending::Whole(body) => Ok(StoredResponse::streamed(
            status,
            &headers,
            &body,
            tail.trailers.as_ref(),
            &config.replay_headers,
        )),
        Ending::NotKept(why) => {
            tracing::warn!(target: TARGET, key = config.logged_key(key), limit, reason = why.reason(), "the request is kept as handled, its response not kept");
            let handled = judged.unwrap_or(status);
            Ok(StoredResponse::not_kept(
                handled,
                &headers,
                why,
                &config.replay_headers,
            ))
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
