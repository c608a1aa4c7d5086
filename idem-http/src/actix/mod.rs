//! The layer as actix-web middleware: [`IdempotencyLayer`](crate::IdempotencyLayer) is an
//! actix-web `Transform` too, so `App::new().wrap(layer)` takes it as axum's `Router::layer`
//! does. The statuses, problem documents, scopes, quotas, stored and streamed answers are the
//! tower layer's own: the same code decides them, and this module only adapts actix-web's
//! request and response types.
//!
//! ```no_run
//! use actix_web::{web, App, HttpResponse, HttpServer};
//! use idem_core::Idempotency;
//! use idem_http::IdempotencyLayer;
//! use idem_stores::memory::MemoryStore;
//!
//! async fn create_payment(body: String) -> HttpResponse {
//!     // Charge the card here: it runs once per key, and retries get this answer back.
//!     HttpResponse::Created().body(format!("charged for {body}"))
//! }
//!
//! fn main() -> std::io::Result<()> {
//!     let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
//!     actix_web::rt::System::new().block_on(async move {
//!         HttpServer::new(move || {
//!             App::new()
//!                 .wrap(layer.clone())
//!                 .route("/payments", web::post().to(create_payment))
//!         })
//!         .bind(("127.0.0.1", 8080))?
//!         .run()
//!         .await
//!     })
//! }
//! ```
//!
//! The handler runs inside the engine's call, as behind the tower layer:
//! `idem_core::context()`, `idem_core::step` and the lease are the call's, although actix-web
//! runs the handler in a task of its own on its worker's thread (the call goes with it).
//!
//! Three things differ from the tower layer, all for what actix-web is: the scope is read from
//! the actix-web request by [`actix_scope`](crate::IdempotencyLayerBuilder::actix_scope) or
//! [`scope_from_extension`](crate::IdempotencyLayerBuilder::scope_from_extension), since a
//! [`scope`](crate::IdempotencyLayerBuilder::scope) closure would see the request's head
//! without its extensions (a layer set up with one alone refuses keyed requests here, saying
//! so); trailers, which actix-web does not send, are neither stored nor replayed; and a
//! handler that panics takes its request with it, so its 500 reaches actix-web as an error
//! whose response it is, which middleware outside the layer that decorates only the responses
//! it gets (`DefaultHeaders`, CORS) does not see.
//!
//! A request with `Expect: 100-continue` whose `Content-Length` is over
//! [`max_request_body`](crate::IdempotencyLayerBuilder::max_request_body) is refused with a
//! 413 before its body is read, as behind the tower layer; but actix-web's HTTP/1 server
//! answers `100 Continue` itself before any middleware sees the request, so the client may
//! start sending the body it then does not need. Bound uploads in front of actix-web (a proxy)
//! if that matters.
//!
//! Put the middleware that sets the principal outside this one (`wrap` it after), and a
//! compression middleware outside too, so that each replay is encoded as the client asks.

mod body;
mod discard;
mod head;
mod middleware;
mod payload;
mod relay;

pub use middleware::IdempotencyMiddleware;
