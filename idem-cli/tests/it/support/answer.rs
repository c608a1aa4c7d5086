//! A handler for a layer under test that answers every request alike, with the status,
//! headers and body a test gives.

use std::convert::Infallible;
use std::future::Ready;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use tower_service::Service;

/// A handler that answers every request with this status, these headers and this body.
#[derive(Clone)]
pub struct Answer {
    /// The status of every answer.
    pub status: StatusCode,
    /// Its headers.
    pub headers: Vec<(&'static str, &'static str)>,
    /// Its body.
    pub body: Bytes,
}

impl Service<Request<idem_http::Body>> for Answer {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<idem_http::Body>) -> Self::Future {
        let mut response = Response::new(Full::new(self.body.clone()));
        *response.status_mut() = self.status;
        for (name, value) in &self.headers {
            response
                .headers_mut()
                .insert(*name, http::HeaderValue::from_static(value));
        }
        std::future::ready(Ok(response))
    }
}
