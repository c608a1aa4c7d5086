//! `idem_http::IdempotencyLayer` as actix-web middleware (idem-http's `actix-web` feature): a
//! `POST /payments` on a free loopback port that runs once per key, and a client that retries
//! and then reuses its key by mistake. The layer is the one axum takes, `wrap`ped.
//!
//! Run with `cargo run -p idem-examples --features actix --example actix_payments`.

mod retry_scenario;

use std::sync::atomic::{AtomicUsize, Ordering};

use actix_web::http::header;
use actix_web::{web, App, HttpResponse, HttpServer};
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;

/// How many times the handler ran: once per payment, whatever the retries.
static CHARGES: AtomicUsize = AtomicUsize::new(0);

async fn create_payment(body: String) -> HttpResponse {
    let charge = CHARGES.fetch_add(1, Ordering::SeqCst) + 1;
    HttpResponse::Created()
        .insert_header((header::LOCATION, format!("/payments/ch_{charge}")))
        .body(format!("{{\"id\":\"ch_{charge}\",\"request\":{body}}}"))
}

fn main() -> std::io::Result<()> {
    let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(move || {
            App::new()
                .wrap(layer.clone())
                .route("/payments", web::post().to(create_payment))
        })
        .workers(1)
        .bind(("127.0.0.1", 0))?;
        let url = format!("http://{}/payments", server.addrs()[0]);
        let server = server.run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        println!("actix-web serving on {url}\n");

        retry_scenario::play(&url, &CHARGES).await;
        handle.stop(true).await;
        Ok(())
    })
}
