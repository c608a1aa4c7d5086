//! The layer's [`idem_http::Body`], made `Sync` for the tower adaptors of poem and salvo.
//!
//! The layer boxes whatever body the handler answers with, so its body is `Send` but not
//! `Sync`. poem's `TowerCompatExt::compat` and salvo's `TowerLayerCompat::compat` ask
//! `Send + Sync` of the response body, and salvo's boxed request body must be `Sync` too. A
//! `Mutex` makes any `Send` body `Sync`: reading the body goes through `&mut` and never locks;
//! only the length hint and the end-of-stream check, which take `&self`, do.

use std::io;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

/// An [`idem_http::Body`] that is `Sync`, with the same frames, length hint and end.
pub struct SyncBody(Mutex<idem_http::Body>);

impl SyncBody {
    /// Wraps `body`.
    pub fn new(body: idem_http::Body) -> Self {
        SyncBody(Mutex::new(body))
    }
}

impl Body for SyncBody {
    type Data = Bytes;
    // A concrete error type: both adaptors ask `std::error::Error` of it, which a boxed
    // `dyn Error` is not.
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let body = self
            .get_mut()
            .0
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        Pin::new(body).poll_frame(cx).map_err(io::Error::other)
    }

    fn is_end_stream(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .size_hint()
    }
}
