//! Reading a keyed request's body, up to the layer's limit.

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::{HeaderMap, Response};

use crate::answer;
use crate::body::{self, Body, BoxError, Read};
use crate::config::Config;
use crate::contract::Keyed;
use crate::telemetry::RequestOutcome;
use crate::{grpc, TARGET};

/// How reading a keyed request's body ended.
pub(crate) enum BodyRead {
    /// The whole body, within the limit: the request runs under the engine.
    Whole(Bytes),
    /// Refused by the layer with this answer; nothing ran.
    Refused(RequestOutcome, Response<Body>),
}

/// Reads the body of the keyed request whose headers are `headers`.
pub(crate) async fn read_body<B>(
    config: &Config,
    keyed: &Keyed,
    headers: &HeaderMap,
    body: B,
) -> BodyRead
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    let (key, asked) = (&keyed.key, &keyed.asked);
    let limit = config.max_request_body;
    let too_large = || {
        let answer = asked.render(answer::body_too_large(key, limit));
        BodyRead::Refused(RequestOutcome::TooLarge, answer)
    };
    if content_length(headers).is_some_and(|len| len > limit as u64) {
        return too_large();
    }
    let bytes = match body::read_up_to(body, limit).await {
        Read::Whole(bytes) => bytes,
        Read::Unbuffered(_) => return too_large(),
        Read::Failed(error) => {
            tracing::debug!(target: TARGET, key = config.logged_key(key), %error, "request body unreadable");
            let answer = asked.render(answer::body_unreadable(key));
            return BodyRead::Refused(RequestOutcome::Unreadable, answer);
        }
    };
    // Whatever the route, a keyed request runs under the engine or is refused: one that says
    // it is gRPC but is not one request message (a client-streaming call, or a plain body
    // under a gRPC content type) has nothing the layer could replay it for.
    if asked.grpc && grpc::message_count(&bytes) != Some(1) {
        tracing::debug!(target: TARGET, key = config.logged_key(key), "keyed gRPC call with other than one request message refused");
        let answer = asked.render(answer::grpc_not_one_message(key));
        return BodyRead::Refused(RequestOutcome::Unreadable, answer);
    }
    BodyRead::Whole(bytes)
}

/// The `Content-Length` a head declares, if it is a number.
pub(crate) fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}
