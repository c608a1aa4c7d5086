//! `idem_http::IdempotencyLayer` in a salvo server, through salvo's `tower-compat` feature: a
//! `POST /payments` on a free loopback port that runs once per key, and a client that retries
//! and then reuses its key by mistake.
//!
//! salvo's `TowerLayerCompat::compat` turns a tower layer into a salvo handler to `hoop` a
//! router with. Its inner service takes salvo's own request body: a map after the layer hands
//! salvo the body the layer passes on.
//!
//! One guarantee is weaker under this adaptor: salvo runs the handlers behind the hoop in the
//! request's own task, so a client that disconnects mid-handler cuts the handler off there,
//! and the layer, told the call failed, releases the key: the retry runs the handler again.
//! Under axum or poem the handler finishes in a task of its own and the retry gets its
//! response.
//!
//! Run with `cargo run -p idem-examples --features salvo --example salvo_payments`.

mod retry_scenario;

use std::sync::atomic::{AtomicUsize, Ordering};

use http_body_util::BodyExt;
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use salvo::conn::tcp::TcpAcceptor;
use salvo::http::{header, ReqBody, StatusCode};
use salvo::prelude::*;
use tower::ServiceBuilder;

/// How many times the handler ran: once per payment, whatever the retries.
static CHARGES: AtomicUsize = AtomicUsize::new(0);

#[handler]
async fn create_payment(request: &mut Request, response: &mut Response) {
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

/// The body the layer hands on, as salvo's request body.
fn salvo_body(body: idem_http::Body) -> ReqBody {
    ReqBody::Boxed {
        inner: Box::pin(body.map_err(Into::into)),
        fuse_config: None,
    }
}

#[tokio::main]
async fn main() {
    let idem = Idempotency::new(MemoryStore::new());
    let idempotency = ServiceBuilder::new()
        .layer(IdempotencyLayer::new(idem))
        .map_request(|request: http::Request<idem_http::Body>| request.map(salvo_body))
        .compat::<ReqBody>();
    let router = Router::new()
        .hoop(idempotency)
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
