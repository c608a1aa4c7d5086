//! The layer is ready when the service it wraps is: a handler applying backpressure (a
//! concurrency limit, a full queue) keeps it so through the layer.

use std::convert::Infallible;
use std::future::Ready;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use http::{Request, Response};
use idem_http::{Body, IdempotencyLayer};
use tower_layer::Layer;
use tower_service::Service;

use crate::support::memory;

/// A handler that is ready only while its gate is open.
#[derive(Clone)]
struct Gated(Arc<AtomicBool>);

impl Service<Request<Body>> for Gated {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Ready<Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        if self.0.load(Ordering::SeqCst) {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    }

    fn call(&mut self, _: Request<Body>) -> Self::Future {
        std::future::ready(Ok(Response::new(Body::from(bytes::Bytes::new()))))
    }
}

#[test]
fn the_layer_is_ready_only_when_its_handler_is() {
    let open = Arc::new(AtomicBool::new(false));
    let mut service = IdempotencyLayer::new(memory()).layer(Gated(open.clone()));
    let mut cx = Context::from_waker(Waker::noop());
    let mut poll_ready = || Service::<Request<Body>>::poll_ready(&mut service, &mut cx);

    assert!(poll_ready().is_pending());
    open.store(true, Ordering::SeqCst);
    assert!(matches!(poll_ready(), Poll::Ready(Ok(()))));
}
