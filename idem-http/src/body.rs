//! The one body type the layer hands its service and returns, and reading bodies up to a limit.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use sync_wrapper::SyncWrapper;

/// A boxed error, as bodies and services report them.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The body of the requests the layer passes on and of the responses it returns: any body of
/// `Bytes`, boxed. It is `Send` and `Sync` whatever it holds (frameworks whose tower adaptors
/// ask for a `Sync` body take it as it is), and fails with a [`BodyError`].
// A struct rather than an alias of `UnsyncBoxBody<Bytes, BoxError>`: the `dyn Error + 'static`
// in the alias makes rustc fail to prove the handler's futures `Send` inside async functions.
pub struct Body {
    /// Reached only through `&mut`, which is what makes the body `Sync`.
    inner: SyncWrapper<UnsyncBoxBody<Bytes, BoxError>>,
    /// Whether the body has ended, and its size hint, as of its last poll: a body changes only
    /// when it is polled.
    ended: bool,
    hint: SizeHint,
}

impl Body {
    /// Boxes any body of `Bytes`.
    pub fn new<B>(body: B) -> Self
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        Body::boxed(body.map_err(Into::into).boxed_unsync())
    }

    fn boxed(inner: UnsyncBoxBody<Bytes, BoxError>) -> Self {
        Body {
            ended: http_body::Body::is_end_stream(&inner),
            hint: http_body::Body::size_hint(&inner),
            inner: SyncWrapper::new(inner),
        }
    }
}

impl From<Bytes> for Body {
    fn from(bytes: Bytes) -> Self {
        full(bytes)
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body").finish_non_exhaustive()
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let inner = self.inner.get_mut();
        let polled = Pin::new(&mut *inner).poll_frame(cx);
        if let Poll::Ready(frame) = &polled {
            // A body that gave its end has ended, whatever it says of itself.
            let ended = frame.is_none() || http_body::Body::is_end_stream(&*inner);
            let hint = http_body::Body::size_hint(&*inner);
            self.ended = ended;
            self.hint = hint;
        }
        polled.map_err(BodyError)
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }

    fn size_hint(&self) -> SizeHint {
        self.hint
    }
}

/// Why a [`Body`] failed: the error of the body it holds, or of the layer's reading of it.
#[derive(Debug)]
pub struct BodyError(BoxError);

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for BodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// A body holding `bytes`.
pub(crate) fn full(bytes: Bytes) -> Body {
    Body::boxed(
        Full::new(bytes)
            .map_err(|never| match never {})
            .boxed_unsync(),
    )
}

/// A body holding `bytes`, then `trailers`.
pub(crate) fn with_trailers(bytes: Bytes, trailers: http::HeaderMap) -> Body {
    let trailers = std::future::ready(Some(Ok(trailers)));
    Body::boxed(
        Full::new(bytes)
            .with_trailers(trailers)
            .map_err(|never| match never {})
            .boxed_unsync(),
    )
}

/// A body whose panics while it is polled are errors of the body instead.
pub(crate) struct PanicsAsErrors<B>(pub(crate) B);

impl<B> http_body::Body for PanicsAsErrors<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll_frame(cx))) {
            Ok(polled) => polled.map(|frame| frame.map(|frame| frame.map_err(Into::into))),
            Err(_) => Poll::Ready(Some(Err("the response body panicked".into()))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.0.size_hint()
    }
}

/// Boxes any body of `Bytes`.
pub(crate) fn boxed<B>(body: B) -> Body
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    Body::new(body)
}

/// How reading a body up to a limit ended.
pub(crate) enum Read<B> {
    /// The whole body, within the limit.
    Whole(Bytes),
    /// The body goes past the limit, or has trailers: what was read, then the rest, unread.
    Unbuffered(Resumed<B>),
    /// The body failed.
    Failed(BoxError),
}

/// Reads `body` whole if it holds at most `limit` bytes and no trailers.
pub(crate) async fn read_up_to<B>(mut body: B, limit: usize) -> Read<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    let mut frames = VecDeque::new();
    let mut len = 0;
    loop {
        let frame = match body.frame().await {
            None => break,
            Some(Err(error)) => return Read::Failed(error.into()),
            Some(Ok(frame)) => frame,
        };
        let over = match frame.data_ref() {
            Some(data) => {
                len += data.len();
                len > limit
            }
            None => true,
        };
        frames.push_back(frame);
        if over {
            return Read::Unbuffered(Resumed {
                read: frames,
                rest: body,
            });
        }
    }
    let mut whole = BytesMut::with_capacity(len);
    for frame in frames {
        if let Ok(data) = frame.into_data() {
            whole.extend_from_slice(&data);
        }
    }
    Read::Whole(whole.freeze())
}

/// A body whose first frames were already read: they come first, then the rest.
pub(crate) struct Resumed<B> {
    read: VecDeque<Frame<Bytes>>,
    rest: B,
}

impl<B> http_body::Body for Resumed<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(frame) = self.read.pop_front() {
            return Poll::Ready(Some(Ok(frame)));
        }
        Pin::new(&mut self.rest).poll_frame(cx).map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.read.is_empty() && self.rest.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let read: u64 = self
            .read
            .iter()
            .filter_map(|frame| frame.data_ref().map(|data| data.len() as u64))
            .sum();
        let rest = self.rest.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(rest.lower() + read);
        if let Some(upper) = rest.upper() {
            hint.set_upper(upper + read);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body that yields its chunks one frame at a time.
    struct Chunks(VecDeque<Bytes>);

    impl http_body::Body for Chunks {
        type Data = Bytes;
        type Error = BoxError;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            Poll::Ready(self.0.pop_front().map(|chunk| Ok(Frame::data(chunk))))
        }
    }

    fn chunks(parts: &[&'static str]) -> Chunks {
        Chunks(
            parts
                .iter()
                .map(|part| Bytes::from_static(part.as_bytes()))
                .collect(),
        )
    }

    /// What the tower adaptors of poem and salvo ask of a response body.
    fn taken_by_sync_adaptors<B>(_: &B)
    where
        B: http_body::Body + Send + Sync + 'static,
        B::Error: std::error::Error + Send + Sync + 'static,
    {
    }

    #[tokio::test]
    async fn a_body_is_sync_and_tells_its_end_and_length_as_it_is_read() {
        let mut body = Body::new(chunks(&["ab", "cde"]));
        taken_by_sync_adaptors(&body);
        assert!(!http_body::Body::is_end_stream(&body));
        let whole = full(Bytes::from_static(b"abc"));
        assert_eq!(http_body::Body::size_hint(&whole).exact(), Some(3));
        assert_eq!(
            body.frame().await.unwrap().unwrap().into_data().unwrap(),
            "ab"
        );
        assert_eq!(
            body.frame().await.unwrap().unwrap().into_data().unwrap(),
            "cde"
        );
        assert!(body.frame().await.is_none());
        assert!(
            http_body::Body::is_end_stream(&body),
            "ended once read to its end"
        );
        let mut whole = whole;
        let _ = whole.frame().await;
        assert!(http_body::Body::is_end_stream(&whole));
        assert_eq!(http_body::Body::size_hint(&whole).exact(), Some(0));
    }

    #[tokio::test]
    async fn a_body_within_the_limit_is_read_whole() {
        let Read::Whole(bytes) = read_up_to(chunks(&["ab", "cd"]), 4).await else {
            panic!("within the limit");
        };
        assert_eq!(bytes, "abcd");
    }

    #[tokio::test]
    async fn a_body_over_the_limit_comes_back_entire() {
        let Read::Unbuffered(resumed) = read_up_to(chunks(&["ab", "cd", "ef"]), 3).await else {
            panic!("over the limit");
        };
        let all = resumed.collect().await.unwrap().to_bytes();
        assert_eq!(all, "abcdef");
    }
}
