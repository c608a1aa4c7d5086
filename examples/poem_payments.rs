//! `idem_http::IdempotencyLayer` in a poem server, through poem's `tower-compat` feature: a
//! `POST /payments` on a free loopback port that runs once per key, and a client that retries
//! and then reuses its key by mistake.
//!
//! poem's `TowerCompatExt::compat` turns a tower service of `http` requests into a poem
//! endpoint. The layer wraps the poem routes as such a service (`EndpointService` below). The connection's
//! addresses (`RemoteAddr`, `LocalAddr`) do not reach the handlers behind it: `compat` hands
//! on method, URI, headers, extensions and body only.
//!
//! Run with `cargo run -p idem-examples --features poem --example poem_payments`.

mod retry_scenario;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use http_body_util::combinators::BoxBody;
use http_body_util::BodyExt;
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use poem::endpoint::TowerCompatExt;
use poem::http::{header, StatusCode};
use poem::listener::TcpAcceptor;
use poem::web::{LocalAddr, RemoteAddr};
use poem::{handler, post, Endpoint, IntoResponse, Response, Route, Server};
use tower::{Layer, Service};

/// How many times the handler ran: once per payment, whatever the retries.
static CHARGES: AtomicUsize = AtomicUsize::new(0);

#[handler]
async fn create_payment(body: String) -> Response {
    let charge = CHARGES.fetch_add(1, Ordering::SeqCst) + 1;
    format!("{{\"id\":\"ch_{charge}\",\"request\":{body}}}")
        .with_status(StatusCode::CREATED)
        .with_header(header::LOCATION, format!("/payments/ch_{charge}"))
        .into_response()
}

/// A poem endpoint as the tower service the layer wraps: it takes the requests the layer hands
/// on, and answers every one (poem's errors as their responses, so that the layer sees their
/// status).
struct EndpointService<E>(Arc<E>);

impl<E> Clone for EndpointService<E> {
    fn clone(&self) -> Self {
        EndpointService(self.0.clone())
    }
}

type PoemBody = BoxBody<bytes::Bytes, std::io::Error>;

impl<E: Endpoint + 'static> Service<http::Request<idem_http::Body>> for EndpointService<E> {
    type Response = http::Response<PoemBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<idem_http::Body>) -> Self::Future {
        let endpoint = self.0.clone();
        Box::pin(async move {
            let (head, body) = request.into_parts();
            // The connection's addresses do not cross the tower service: poem's `compat`
            // hands on method, URI, headers and extensions only.
            let head = poem::RequestParts::from((
                head,
                LocalAddr::default(),
                RemoteAddr::default(),
                http::uri::Scheme::HTTP,
            ));
            let body = poem::Body::from(PoemBody::new(body.map_err(std::io::Error::other)));
            let request = poem::Request::from_parts(head, body);
            Ok(endpoint.get_response(request).await.into())
        })
    }
}

#[tokio::main]
async fn main() {
    let idem = Idempotency::new(MemoryStore::new());
    let routes = Route::new().at("/payments", post(create_payment));
    let app = IdempotencyLayer::new(idem)
        .layer(EndpointService(Arc::new(routes)))
        .compat();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let url = format!("http://{}/payments", listener.local_addr().expect("bound"));
    let acceptor = TcpAcceptor::from_tokio(listener).expect("a poem acceptor");
    tokio::spawn(async move {
        Server::new_with_acceptor(acceptor)
            .run(app)
            .await
            .expect("the server runs")
    });
    println!("poem serving on {url}\n");

    retry_scenario::play(&url, &CHARGES).await;
}
