//! The same app on actix-web: the no-work handler alone, and behind idem-http's middleware
//! (the same `IdempotencyLayer`, wrapped).

use std::net::SocketAddr;

use actix_web::dev::Server;
use actix_web::{web, App, HttpResponse, HttpServer};
use idem_http::IdempotencyLayer;

use crate::routers::PAYMENTS;

/// The handler every actix-web app runs: the axum one's answer.
async fn create_payment(body: String) -> HttpResponse {
    HttpResponse::Created().body(format!(r#"{{"id":"ch_1","request":{body}}}"#))
}

/// Two workers (the axum routers have two worker threads) on a free loopback port, keeping
/// idle connections open as hyper does (actix-web closes them after 5 s, and a router's
/// connections wait while the others' phases run).
macro_rules! bound {
    ($server:expr) => {{
        let server = $server
            .workers(2)
            .keep_alive(actix_web::http::KeepAlive::Os)
            .disable_signals()
            .bind(("127.0.0.1", 0))
            .expect("a free loopback port");
        let address = server.addrs()[0];
        (server.run(), address)
    }};
}

/// The app without any layer; its address.
pub fn plain() -> SocketAddr {
    on_its_own_thread(|| {
        bound!(HttpServer::new(
            || App::new().route(PAYMENTS, web::post().to(create_payment))
        ))
    })
}

/// The app behind idem-http's middleware; its address.
pub fn idem_http(layer: IdempotencyLayer) -> SocketAddr {
    on_its_own_thread(move || {
        bound!(HttpServer::new(move || {
            App::new()
                .wrap(layer.clone())
                .route(PAYMENTS, web::post().to(create_payment))
        }))
    })
}

/// Runs the server `build` makes on an actix-web system of a thread of its own.
fn on_its_own_thread(build: impl FnOnce() -> (Server, SocketAddr) + Send + 'static) -> SocketAddr {
    let (started, serving) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            let (server, address) = build();
            started
                .send(address)
                .expect("the bench waits for the address");
            server.await
        })
    });
    serving.recv().expect("the actix-web server starts")
}
