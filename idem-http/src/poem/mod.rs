//! The layer as poem middleware: [`IdempotencyLayer`](crate::IdempotencyLayer) is a poem
//! `Middleware` too, so `Route::new().at(..).with(layer)` takes it as axum's `Router::layer`
//! does. The statuses, problem documents, scopes, quotas, stored and streamed answers are the
//! tower layer's own: the same code decides them, and this module only adapts poem's request
//! and response types.
//!
//! ```no_run
//! use idem_core::Idempotency;
//! use idem_http::IdempotencyLayer;
//! use idem_stores::memory::MemoryStore;
//! use poem::http::StatusCode;
//! use poem::listener::TcpListener;
//! use poem::{handler, post, EndpointExt, IntoResponse, Route, Server};
//!
//! #[handler]
//! async fn create_payment(body: String) -> impl IntoResponse {
//!     // Charge the card here: it runs once per key, and retries get this answer back.
//!     format!("charged for {body}").with_status(StatusCode::CREATED)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
//! let app = Route::new()
//!     .at("/payments", post(create_payment))
//!     .with(layer);
//! Server::new(TcpListener::bind("127.0.0.1:3000")).run(app).await
//! # }
//! ```
//!
//! The endpoint behind the layer runs inside the engine's call, as a tower service does:
//! [`idem_core::context()`] is the call, [`idem_core::step`] records, and a client that
//! disconnects mid-handler does not cut it off (it finishes in a task of its own, its answer
//! is stored, and the retry gets the replay). It gets the request as poem made it: its
//! addresses (`RemoteAddr`, `LocalAddr`), scheme, path parameters and extensions, so a
//! principal an authentication middleware put in the extensions is what
//! [`scope_from_extension`](crate::IdempotencyLayerBuilder::scope_from_extension) and
//! [`scope`](crate::IdempotencyLayerBuilder::scope) read.
//!
//! **Errors.** A `poem::Error` with a client-error status (an extractor's 400, a
//! `NotFoundError`) is judged as the response poem renders for it, like any answer: a 400 or
//! 422 releases the key, a 404 is stored. A `poem::Error` with a server-error status is a
//! failure after the endpoint began (a timeout middleware inside the layer, a handler that
//! gave up halfway): the endpoint may have acted, so its key is held until its lease passes,
//! as after a panic, and the error goes on to poem as it came; a retry meanwhile is told the
//! request is in progress (409), and one after takes the key over, as after a crash.
//! To answer "nothing happened, try again" (a 503 before any effect), return it as a
//! response (`Ok(StatusCode::SERVICE_UNAVAILABLE.into_response())`): a 5xx response releases
//! the key, as under tower.
//!
//! Put the middleware that sets the principal outside this one (`with` it after), and a
//! compression middleware outside too, so that each replay is encoded as the client asks.

mod endpoint;

pub use endpoint::IdempotencyEndpoint;
