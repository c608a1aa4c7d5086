//! The layer as a salvo hoop: [`IdempotencyLayer`](crate::IdempotencyLayer) is a salvo
//! `Handler` too, so `Router::new().hoop(layer)` takes it as axum's `Router::layer` does. The
//! statuses, problem documents, scopes, quotas, stored and streamed answers are the tower
//! layer's own: the same code decides them, and this module only adapts salvo's request and
//! response types.
//!
//! ```no_run
//! use idem_core::Idempotency;
//! use idem_http::IdempotencyLayer;
//! use idem_stores::memory::MemoryStore;
//! use salvo_core::conn::TcpListener;
//! use salvo_core::http::StatusCode;
//! use salvo_core::prelude::*;
//!
//! #[handler]
//! async fn create_payment(request: &mut Request, response: &mut Response) {
//!     let body = request.payload().await.cloned().unwrap_or_default();
//!     // Charge the card here: it runs once per key, and retries get this answer back.
//!     response.status_code(StatusCode::CREATED);
//!     response.render(format!("charged for {}", String::from_utf8_lossy(&body)));
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
//! let router = Router::new()
//!     .hoop(layer)
//!     .push(Router::with_path("payments").post(create_payment));
//! let acceptor = TcpListener::new("127.0.0.1:5800").bind().await;
//! Server::new(acceptor).serve(router).await;
//! # }
//! ```
//!
//! The handlers behind the hoop (the rest of its chain: later hoops and the goal) run inside
//! the engine's call, as a tower service does: [`idem_core::context()`] is the call,
//! [`idem_core::step`] records, and a client that disconnects mid-handler does not cut them
//! off. For that the hoop moves the request, the depot, the response and the rest of the chain
//! into the call, which finishes in a task of its own once the client is gone (its answer is
//! stored, and the retry gets the replay), and puts them back when it ends: what the
//! handlers left in the depot is there for the hoops before this one. A replay or a
//! conflict runs none of the handlers behind the hoop.
//!
//! A principal an authentication hoop put in the request's extensions is what
//! [`scope_from_extension`](crate::IdempotencyLayerBuilder::scope_from_extension) and
//! [`scope`](crate::IdempotencyLayerBuilder::scope) read (salvo's depot is not read: put the
//! principal in `req.extensions_mut()`); hoop that hoop before this one. A response with an
//! error status and no body (`StatusError` rendered, say) is stored without one, and salvo's
//! catcher writes its page to the first answer and to each replay alike, from the status
//! alone. A hoop that already read the body (`req.payload()`) before this one is fine: the
//! layer reads the payload salvo kept; one that parsed it as a form (`req.form_data()`) leaves
//! the layer an empty body, so hoop this layer before such a hoop.
mod hoop;
