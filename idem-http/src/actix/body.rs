//! Bodies across the two worlds: the layer's [`Body`] as an actix-web `MessageBody`, and a
//! handler's `MessageBody`, which stays on its worker's thread, as a [`Body`] the layer can
//! read from any task.

use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, MessageBody};
use bytes::Bytes;
use http_body::{Body as _, Frame, SizeHint};
use tokio::sync::mpsc;

use crate::body::{self, Body, BoxError};

/// The layer's body as actix-web sends it: its data, without trailers (which actix-web does
/// not send).
pub(crate) struct Outgoing(pub(crate) Body);

impl MessageBody for Outgoing {
    // actix-web takes errors that convert into a non-`Send` box, which `BoxError` does not.
    type Error = std::io::Error;

    fn size(&self) -> BodySize {
        match http_body::Body::size_hint(&self.0).exact() {
            Some(len) => BodySize::Sized(len),
            None => BodySize::Stream,
        }
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, std::io::Error>>> {
        loop {
            let frame = std::task::ready!(Pin::new(&mut self.0).poll_frame(cx));
            match frame {
                None => return Poll::Ready(None),
                Some(Err(error)) => return Poll::Ready(Some(Err(std::io::Error::other(error)))),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
            }
        }
    }
}

/// A handler's response body as the layer reads it: its bytes at once when actix-web has them
/// in memory (most answers), else pumped from a task on the worker's thread, one chunk at a
/// time, at the pace the layer reads them.
pub(crate) fn sendable<B>(body: B) -> Body
where
    B: MessageBody + 'static,
{
    let body = match body.try_into_bytes() {
        Ok(bytes) => return body::full(bytes),
        Err(body) => body,
    };
    let remaining = match body.size() {
        BodySize::None => return body::full(Bytes::new()),
        BodySize::Sized(len) => Some(len),
        BodySize::Stream => None,
    };
    let (sender, chunks) = mpsc::channel(1);
    actix_web::rt::spawn(pump(body, sender));
    Body::new(Pumped {
        chunks,
        remaining,
        ended: false,
    })
}

/// What a pump sends: a chunk, the body's failure, or its end. A pump that stops without
/// either (its body panicked) has cut the body off, which is a failure too.
enum Pumping {
    Chunk(Bytes),
    Failed(BoxError),
    End,
}

/// Reads `body` into `sender` until it ends, fails, or the reader is gone.
async fn pump<B: MessageBody>(body: B, sender: mpsc::Sender<Pumping>) {
    let mut body = std::pin::pin!(body);
    loop {
        let next = std::future::poll_fn(|cx| body.as_mut().poll_next(cx));
        let chunk = tokio::select! {
            chunk = next => chunk,
            () = sender.closed() => return,
        };
        let (sent, last) = match chunk {
            None => (Pumping::End, true),
            Some(Ok(bytes)) => (Pumping::Chunk(bytes), false),
            Some(Err(error)) => {
                let error: Box<dyn std::error::Error> = error.into();
                (Pumping::Failed(error.to_string().into()), true)
            }
        };
        if sender.send(sent).await.is_err() || last {
            return;
        }
    }
}

/// The chunks a [`pump`] sends, as a body.
struct Pumped {
    chunks: mpsc::Receiver<Pumping>,
    /// What is left of a body of known length.
    remaining: Option<u64>,
    /// Whether the end was read: the pump is gone then, which is no failure.
    ended: bool,
}

impl http_body::Body for Pumped {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let sent = std::task::ready!(self.chunks.poll_recv(cx));
        self.ended = !matches!(sent, Some(Pumping::Chunk(_)));
        Poll::Ready(match sent {
            Some(Pumping::Chunk(bytes)) => {
                if let Some(remaining) = &mut self.remaining {
                    *remaining = remaining.saturating_sub(bytes.len() as u64);
                }
                Some(Ok(Frame::data(bytes)))
            }
            Some(Pumping::Failed(error)) => Some(Err(error)),
            Some(Pumping::End) => match self.remaining {
                Some(short @ 1..) => Some(Err(format!(
                    "the response body ended {short} bytes short of its declared length"
                )
                .into())),
                _ => None,
            },
            None => Some(Err(
                "the response body was cut off: its handler panicked".into()
            )),
        })
    }

    fn size_hint(&self) -> SizeHint {
        match self.remaining {
            Some(len) => SizeHint::with_exact(len),
            None => SizeHint::default(),
        }
    }
}
