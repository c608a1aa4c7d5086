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
//! [`scope`](crate::IdempotencyLayerBuilder::scope) read. An error the endpoint returns is
//! answered as poem renders it, and that response is what the layer judges and stores, so
//! middleware outside the layer sees a response, not the `poem::Error`.
//!
//! Put the middleware that sets the principal outside this one (`with` it after), and a
//! compression middleware outside too, so that each replay is encoded as the client asks.

mod endpoint;

pub use endpoint::IdempotencyEndpoint;
