//! `idem_http::IdempotencyLayer` as poem middleware (idem-http's `poem` feature): a
//! `POST /payments` on a free loopback port that runs once per key, and a client that retries
//! and then reuses its key by mistake. The layer is the one axum takes, `with`ed onto the
//! routes; the handler runs inside the engine's call and sees the request as poem made it.
//!
//! Run with `cargo run -p idem-examples --features poem --example poem_payments`.

mod retry_scenario;

use std::sync::atomic::{AtomicUsize, Ordering};

use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use poem::http::{header, StatusCode};
use poem::listener::TcpAcceptor;
use poem::web::RemoteAddr;
use poem::{handler, post, EndpointExt, IntoResponse, Response, Route, Server};

/// How many times the handler ran: once per payment, whatever the retries.
static CHARGES: AtomicUsize = AtomicUsize::new(0);

#[handler]
async fn create_payment(remote: &RemoteAddr, body: String) -> Response {
    // The handler runs inside the engine's call, with the client's address as poem read it.
    assert!(
        idem_core::context().is_some(),
        "the handler runs in the call"
    );
    assert!(
        remote.as_socket_addr().is_some(),
        "the client's address is there"
    );
    let charge = CHARGES.fetch_add(1, Ordering::SeqCst) + 1;
    format!("{{\"id\":\"ch_{charge}\",\"request\":{body}}}")
        .with_status(StatusCode::CREATED)
        .with_header(header::LOCATION, format!("/payments/ch_{charge}"))
        .into_response()
}

#[tokio::main]
async fn main() {
    let idem = Idempotency::new(MemoryStore::new());
    let app = Route::new()
        .at("/payments", post(create_payment))
        .with(IdempotencyLayer::new(idem));

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
