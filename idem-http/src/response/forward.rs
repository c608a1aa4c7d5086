//! Streams a handler's response body to its client frame by frame, as it is produced, while
//! keeping a copy for the store.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body::Frame;
use http_body_util::BodyExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::body::{Body, BoxError};
use crate::response::stored::NotKept;

/// What goes to the client: a frame, a failure, or the end.
enum Sent {
    Frame(Frame<Bytes>),
    Failed(BoxError),
    End,
}

/// The body the client gets while the handler's body is forwarded: its frames as they come.
/// A forwarding that stops without saying the body ended (a panic, a runtime shutting down)
/// fails the body, so that a cut-off answer never looks whole.
pub(crate) struct Forwarded {
    frames: mpsc::Receiver<Sent>,
    ended: bool,
}

impl http_body::Body for Forwarded {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let sent = std::task::ready!(self.frames.poll_recv(cx));
        Poll::Ready(match sent {
            Some(Sent::Frame(frame)) => Some(Ok(frame)),
            Some(Sent::End) => {
                self.ended = true;
                None
            }
            Some(Sent::Failed(error)) => {
                self.ended = true;
                Some(Err(error))
            }
            None => {
                self.ended = true;
                Some(Err("the response was cut off before its end".into()))
            }
        })
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }
}

/// The client's end of a forwarding, and the forwarder's.
pub(crate) fn channel() -> (Forwarder, Forwarded) {
    // One frame in flight: the handler's body is read at the pace the client reads it.
    let (sender, frames) = mpsc::channel(1);
    let forwarded = Forwarded {
        frames,
        ended: false,
    };
    (Forwarder(sender), forwarded)
}

/// The forwarder's end of the channel.
pub(crate) struct Forwarder(mpsc::Sender<Sent>);

/// How a forwarded body ended.
pub(crate) enum Ending {
    /// It ended within the limit: all of it.
    Whole(Bytes),
    /// It cannot be replayed.
    NotKept(NotKept),
}

/// The end of a forwarded body, held back from the client until its outcome is recorded, so
/// that a client that saw the end of its answer finds the replay ready.
#[derive(Default)]
pub(crate) struct Tail {
    client: Option<mpsc::Sender<Sent>>,
    /// The body's trailers, if it had any.
    pub(crate) trailers: Option<HeaderMap>,
    failure: Option<BoxError>,
}

impl Tail {
    /// Ends the client's body: with its trailers when its outcome is `settled` (recorded, or
    /// released on purpose), with a failure when it is not, or when the body failed. A client
    /// that takes none of it within `timeout` is left.
    pub(crate) async fn finish(self, settled: bool, timeout: Duration) {
        let Some(client) = self.client else {
            return;
        };
        let _ = tokio::time::timeout(
            timeout,
            Tail::end(client, self.failure, self.trailers, settled),
        )
        .await;
    }

    async fn end(
        client: mpsc::Sender<Sent>,
        failure: Option<BoxError>,
        trailers: Option<HeaderMap>,
        settled: bool,
    ) {
        let last = match (failure, settled) {
            (Some(error), _) => Sent::Failed(error),
            (None, false) => Sent::Failed("the response was not recorded".into()),
            (None, true) => {
                if let Some(trailers) = trailers {
                    let _ = client.send(Sent::Frame(Frame::trailers(trailers))).await;
                }
                Sent::End
            }
        };
        let _ = client.send(last).await;
    }
}

/// Forwards `body` through `forwarder`, keeping a copy of up to `limit` bytes, all but its
/// end: trailers, a failure and the end itself are left in `tail`. A client that goes away,
/// or takes longer than `abandoned_timeout` to take one frame, is given up on; the body is
/// still read (and kept) for up to `abandoned_timeout` more, so that a retry can get it whole,
/// and dropped, unread, once it can no longer be kept.
///
/// The end is held back for chunked and HTTP/2 bodies; a body whose `Content-Length` is
/// declared ends for its client as soon as that many bytes were sent.
pub(crate) async fn forward(
    mut body: Body,
    forwarder: Forwarder,
    limit: usize,
    abandoned_timeout: Duration,
    tail: &mut Tail,
) -> Ending {
    let mut kept = Kept::new(limit);
    let mut client = Some(forwarder.0);
    let mut give_up_at = None;
    loop {
        let pulled = match &client {
            Some(sender) => tokio::select! {
                frame = body.frame() => Some(frame),
                () = sender.closed() => None,
            },
            None => {
                let deadline =
                    *give_up_at.get_or_insert_with(|| Instant::now() + abandoned_timeout);
                match tokio::time::timeout_at(deadline, body.frame()).await {
                    Ok(frame) => Some(frame),
                    Err(_) => return Ending::NotKept(NotKept::Abandoned),
                }
            }
        };
        let frame = match pulled {
            // The client went away.
            None => {
                client = None;
                if kept.is_over() {
                    return Ending::NotKept(NotKept::TooLarge);
                }
                continue;
            }
            Some(None) => {
                tail.client = client;
                return kept.finish();
            }
            Some(Some(Err(error))) => {
                tail.client = client;
                tail.failure = Some(error.into());
                return Ending::NotKept(NotKept::Failed);
            }
            Some(Some(Ok(frame))) => frame,
        };
        if let Some(trailers) = frame.trailers_ref() {
            tail.trailers
                .get_or_insert_with(HeaderMap::new)
                .extend(trailers.clone());
            continue;
        }
        kept.add(&frame);
        if let Some(sender) = &client {
            let sent = tokio::time::timeout(abandoned_timeout, sender.send(Sent::Frame(frame)));
            if !matches!(sent.await, Ok(Ok(()))) {
                client = None;
            }
        }
        if client.is_none() && kept.is_over() {
            return Ending::NotKept(NotKept::TooLarge);
        }
    }
}

/// The copy kept of a forwarded body's data, until it goes past the limit.
struct Kept {
    limit: usize,
    /// `None` once the body went past the limit.
    data: Option<BytesMut>,
}

impl Kept {
    fn new(limit: usize) -> Self {
        Kept {
            limit,
            data: Some(BytesMut::new()),
        }
    }

    fn add(&mut self, frame: &Frame<Bytes>) {
        let (Some(chunk), Some(data)) = (frame.data_ref(), &mut self.data) else {
            return;
        };
        if data.len() + chunk.len() > self.limit {
            self.data = None;
        } else {
            data.extend_from_slice(chunk);
        }
    }

    fn is_over(&self) -> bool {
        self.data.is_none()
    }

    fn finish(self) -> Ending {
        match self.data {
            Some(data) => Ending::Whole(data.freeze()),
            None => Ending::NotKept(NotKept::TooLarge),
        }
    }
}
