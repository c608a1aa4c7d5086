//! actix-web's request payload, read as the contract reads any body.

use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::dev::Payload;
use bytes::Bytes;
use futures_core::Stream;
use http_body::Frame;

use crate::body::BoxError;

/// A request's payload as a body of `Bytes`.
pub(crate) struct PayloadBody(pub(crate) Payload);

impl http_body::Body for PayloadBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Pin::new(&mut self.0).poll_next(cx).map(|chunk| {
            chunk.map(|chunk| {
                chunk
                    .map(Frame::data)
                    .map_err(|error| error.to_string().into())
            })
        })
    }
}
