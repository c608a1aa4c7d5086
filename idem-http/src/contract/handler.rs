//! The handler behind a front end, as the contract calls it.

use std::future::Future;

use bytes::Bytes;
use http::{Request, Response};

use crate::body::BoxError;

/// A front end's handler, called at most once, with the request as the layer read it (its
/// whole body). Its future may finish in a task of its own once the client is gone: it is
/// `Send`, and owns what it needs.
pub(crate) trait Handler: Send + 'static {
    /// The body of the handler's response.
    type Body: http_body::Body<Data = Bytes, Error: Into<BoxError>> + Send + 'static;
    /// How the handler's service fails after the handler began: the key is held until its
    /// lease passes, as after a panic, and the error is the front end's answer.
    type Error: Send + 'static;

    /// Runs the handler on `request`.
    fn call(
        self,
        request: Request<Bytes>,
    ) -> impl Future<Output = Result<Response<Self::Body>, Self::Error>> + Send + 'static;
}
