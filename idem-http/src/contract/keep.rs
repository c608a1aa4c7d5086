//! Running the handler under the engine, and keeping its response as the layer stores it:
//! read whole when it is small and its length known, streamed to its client otherwise.

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body::Body as _;
use idem_core::{Answered, ErrorPolicy, PendingCall, ReleaseErrors};
use tokio::sync::oneshot;

use crate::body::{self, Body, BoxError, PanicsAsErrors, Read};
use crate::config::Config;
use crate::contract::content_length;
use crate::contract::Handler;
use crate::response::forward::{self, Ending, Tail};
use crate::response::stored::{FrameCodec, NotKept, StoredResponse};
use crate::{grpc, TARGET};

/// Why the handler's run ended without a response to store. `PassedOn` and `Released` release
/// the key (or keep it for the same request only, when a step was recorded); `Inner` holds it
/// until its lease passes, as a panic does; an engine error says itself what became of it.
pub(crate) enum Unstored<E> {
    /// The engine refused or failed.
    Engine(idem_core::Error),
    /// The handler's response, whose status is not stored: it reaches the client once the key
    /// is released, so that the client's retry finds the key free.
    PassedOn(Response<Body>),
    /// A streamed response whose status, known at its end, is not stored; the client has all
    /// but its end, which comes once the key is released.
    Released,
    /// The handler's service failed after the handler began (a timeout inside the layer, a
    /// middleware's error): the handler may have acted, so its key is held until its lease
    /// passes, as after a panic, and the front end answers with the error.
    Inner(E),
}

/// The layer's error policy: nothing is stored of an `Err`, which releases the key, except a
/// service's failure after the handler began, which holds it.
pub(crate) struct HoldServiceErrors;

impl<E> ErrorPolicy<Unstored<E>> for HoldServiceErrors {
    fn encode(&self, _: &Unstored<E>) -> Option<Result<Vec<u8>, idem_core::Error>> {
        None
    }

    fn decode(&self, body: &[u8]) -> Result<Unstored<E>, idem_core::Error> {
        ReleaseErrors.decode(body)
    }

    fn holds(&self, error: &Unstored<E>) -> bool {
        matches!(error, Unstored::Inner(_))
    }
}

impl<E> From<idem_core::Error> for Unstored<E> {
    fn from(error: idem_core::Error) -> Self {
        Unstored::Engine(error)
    }
}

/// Runs the handler under the engine, and keeps its response if the layer stores it.
pub(crate) async fn run<H: Handler>(
    config: Arc<Config>,
    pending: PendingCall,
    key: String,
    handler: H,
    request: Request<Bytes>,
    head: oneshot::Sender<Response<Body>>,
) -> Result<Answered<StoredResponse>, Unstored<H::Error>> {
    let idem = config.idem.clone();
    let mut tail = Tail::default();
    // Boxed: the handler's future is most of the call's, and the engine's futures would
    // otherwise move it whole at each of their awaits, on replays too, which never poll it.
    let body = Box::pin(async {
        let response = handler.call(request).await.map_err(|error| {
            tracing::error!(target: TARGET, key = config.logged_key(&key), "the handler's service failed after the handler began; the key is held until its lease passes");
            Unstored::Inner(error)
        })?;
        keep(&config, &key, response, head, &mut tail).await
    });
    // Stored as a frame; a record stored as JSON before still replays.
    let outcome = idem
        .run_pending(pending, &HoldServiceErrors, &FrameCodec, body)
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
