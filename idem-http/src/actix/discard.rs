//! The unread body of a request the layer refused, read and dropped when it is small, so that
//! actix-web keeps the connection open for the client's next request.
//!
//! actix-web closes a connection whose response went out before its request's body was read
//! to the end (unless the body is chunked, which it drains itself). A client that sent a bad
//! key would pay for a new connection, and its TLS handshake, on each retry.

use std::future::poll_fn;
use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;
use http::HeaderMap;

use crate::actix::payload::PayloadBody;
use crate::contract::content_length;

/// The longest declared body read to keep its connection: past it, closing the connection
/// costs less than reading what the layer refused.
pub(crate) const DISCARDED_AT_MOST: u64 = 64 * 1024;

/// How long a refusal waits for the body it discards: a client that declared a body and
/// stalls gets its answer then, and its connection closed, rather than holding the refusal.
pub(crate) const DISCARD_WAIT: Duration = Duration::from_secs(1);

/// Reads what is left of `payload` and drops it, when the request's `Content-Length` says it
/// is at most [`DISCARDED_AT_MOST`] bytes and it comes within [`DISCARD_WAIT`]; else leaves it
/// for actix-web to close the connection on.
pub(crate) async fn discard_small(payload: &mut PayloadBody, headers: &HeaderMap) {
    if content_length(headers).is_none_or(|declared| declared > DISCARDED_AT_MOST) {
        return;
    }
    let _ = tokio::time::timeout(DISCARD_WAIT, read_to_end(payload)).await;
}

/// Reads `payload` to its end, or past [`DISCARDED_AT_MOST`] bytes.
async fn read_to_end(payload: &mut PayloadBody) {
    let mut left = DISCARDED_AT_MOST;
    while let Some(Ok(chunk)) = poll_fn(|cx| Pin::new(&mut payload.0).poll_next(cx)).await {
        match left.checked_sub(chunk.len() as u64) {
            Some(rest) => left = rest,
            None => return,
        }
    }
}
