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
//! use salvo::conn::TcpListener;
//! use salvo::http::StatusCode;
//! use salvo::prelude::*;
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
//! **Errors.** A handler answers with a response; salvo's error, a `StatusError` rendered on
//! it (by `res.render(StatusError::..)`, a handler's `Err`, or a timeout hoop that cut the
//! handler off), is judged by its status. With a client-error status (an extractor's 400, a
//! 404) it is an answer like any other: a 400 or 422 releases the key, a 404 is stored. With
//! a server-error status it is a failure after the chain began: the handler may have acted,
//! so its key is held until its lease passes, as after a panic, and the error goes on to
//! salvo's catcher as it came; a retry meanwhile is told the request is in progress (409),
//! and one after takes the key over, as after a crash.
//! To answer "nothing happened, try again" (a 503 before any effect), write the status and a
//! body of your own (`res.status_code(StatusCode::SERVICE_UNAVAILABLE).render("try again")`):
//! a 5xx response releases the key, as under tower.
//!
//! A principal an authentication hoop put in the request's extensions is what
//! [`scope_from_extension`](crate::IdempotencyLayerBuilder::scope_from_extension) and
//! [`scope`](crate::IdempotencyLayerBuilder::scope) read (salvo's depot is not read: put the
//! principal in `req.extensions_mut()`); hoop that hoop before this one. A response with an
//! error status and no body (a 4xx `StatusError`, say) is stored without one, and salvo's
//! catcher writes its page to the first answer and to each replay alike, from the status
//! alone.
//!
//! A hoop before this one that read the body (`req.payload()`) is fine: the layer reads the
//! payload salvo kept. One that parsed it as a form (`req.form_data()`) keeps no payload: a
//! keyed request whose body went that way is refused with a 500
//! ([`problem::FAILED`](crate::problem::FAILED)) and an error logged, rather than taken for
//! an empty body; hoop this layer before such a hoop.

mod hoop;
