//! `idem_http::IdempotencyLayer` as a salvo hoop (idem-http's `salvo` feature): a
//! `POST /payments` on a free loopback port that runs once per key, and a client that retries
//! and then reuses its key by mistake. The layer is the one axum takes, `hoop`ed onto the
//! router; the handlers behind it run inside the engine's call.
//!
//! Run with `cargo run -p idem-examples --features salvo --example salvo_payments`.

mod retry_scenario;

use std::sync::atomic::{AtomicUsize, Ordering};

use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use salvo::conn::tcp::TcpAcceptor;
use salvo::http::{header, StatusCode};
use salvo::prelude::*;

/// How many times the handler ran: once per payment, whatever the retries.
static CHARGES: AtomicUsize = AtomicUsize::new(0);

#[handler]
async fn create_payment(request: &mut Request, response: &mut Response) {
    // The handler runs inside the engine's call, so its steps are recorded.
    assert!(
        idem_core::context().is_some(),
        "the handler runs in the call"
    );
    let body = match request.payload().await {
        Ok(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Err(error) => {
            response.render(StatusError::bad_request().brief(error.to_string()));
            return;
        }
    };
    let charge = CHARGES.fetch_add(1, Ordering::SeqCst) + 1;
    response.status_code(StatusCode::CREATED);
    response
        .add_header(header::LOCATION, format!("/payments/ch_{charge}"), true)
        .expect("a valid header");
    response.render(format!("{{\"id\":\"ch_{charge}\",\"request\":{body}}}"));
}

#[tokio::main]
async fn main() {
    let idem = Idempotency::new(MemoryStore::new());
    let router = Router::new()
        .hoop(IdempotencyLayer::new(idem))
        .push(Router::with_path("payments").post(create_payment));

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let url = format!("http://{}/payments", listener.local_addr().expect("bound"));
    let acceptor = TcpAcceptor::try_from(listener).expect("a salvo acceptor");
    tokio::spawn(Server::new(acceptor).serve(router));
    println!("salvo serving on {url}\n");

    retry_scenario::play(&url, &CHARGES).await;
}
