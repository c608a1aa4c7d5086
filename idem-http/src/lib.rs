//! Idempotency keys for HTTP APIs: a tower [`Layer`](tower_layer::Layer) for the
//! `Idempotency-Key` header, on the [idem](idem_core) engine. It works with axum, hyper and
//! any tower service of `http` requests (tonic-style services included).
//!
//! ```no_run
//! use axum::{routing::post, Router};
//! use idem_core::Idempotency;
//! use idem_stores::memory::MemoryStore;
//!
//! async fn create_payment(body: String) -> (axum::http::StatusCode, String) {
//!     (axum::http::StatusCode::CREATED, format!("charged for {body}"))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let idem = Idempotency::new(MemoryStore::new());
//! let app: Router = Router::new()
//!     .route("/payments", post(create_payment))
//!     .layer(idem_http::IdempotencyLayer::new(idem));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! axum::serve(listener, app).await
//! # }
//! ```
//!
//! # What it does
//!
//! With no configuration, the layer is already correct and safe; every point below can be
//! changed on [`IdempotencyLayer::builder`].
//!
//! - **Methods.** POST and PATCH requests carrying `Idempotency-Key` are handled. Other
//!   methods, and requests without the header, pass through untouched
//!   ([`require_key`](IdempotencyLayerBuilder::require_key) answers 400 instead).
//! - **The key.** An sf-string (`"8e03978e-..."`, as the IETF draft writes it) or a bare token
//!   (as Stripe's clients send it), of 1 to 255 visible ASCII characters. Anything else, or two
//!   headers, gets a 400.
//! - **Scope.** Keys belong to a principal: by default the SHA-256 digest of the
//!   `Authorization` header (never stored in clear), so two clients never share a record. A
//!   request **without `Authorization` is unscoped**: every such client shares one key space.
//!   Behind cookie sessions or with tenants, set [`scope`](IdempotencyLayerBuilder::scope).
//! - **Fingerprint.** Method, path, query (pairs sorted) and body: an `application/json` (or
//!   `+json`) body by its parsed value, so key order and whitespace don't matter; any other
//!   body by its bytes; plus the [headers you list](IdempotencyLayerBuilder::fingerprint_headers).
//!   A body over 1 MiB gets a 413 before anything is reserved.
//! - **Stored.** Responses with status 200 to 499 except 408, 409, 425 and 429 (see
//!   [`stored_by_default`]); any other response releases the key, so the client can retry it.
//!   A response body over 1 MiB reaches the client unstored, the key is released and a
//!   warning is logged.
//! - **The handler runs in a task of its own**: a client that disconnects never cuts it off
//!   halfway; it finishes, its response is stored, and the client's retry gets the replay.
//! - **Steps.** A handler may record its side effects as
//!   [`idem_core::step`]s. When it then answers with a status that is not
//!   stored (a 502 from a failed downstream, say) after a step was recorded, the key is kept for
//!   the same request only: its retry resumes after the recorded steps, and another request with
//!   the key gets the 422.
//!
//! | case | answer |
//! |---|---|
//! | first request | the handler's response |
//! | replay | the stored status and body, the headers `content-type`, `location`, `content-location`, `etag`, `last-modified`, `link` (and [yours](IdempotencyLayerBuilder::replay_headers)), and `Idempotent-Replayed: true`; never `Set-Cookie` or `Date` |
//! | same key still in progress | 409 with `Retry-After`, or the response once it is done with [`wait`](IdempotencyLayerBuilder::wait) |
//! | same key, other request | 422 (or 400, 409: [`mismatch_status`](IdempotencyLayerBuilder::mismatch_status)) |
//! | bad key, or two | 400 |
//! | body too large | 413 |
//! | store unreachable | 503: nothing ran |
//! | handled, response not recorded | 500: check the effect before retrying |
//!
//! Every error answer is an RFC 9457 `application/problem+json` document whose `type` is one
//! of the [`problem`] constants and whose `detail` names the key.
//!
//! # Which requests should carry keys
//!
//! Those that cause a side effect a retry must not repeat: creating a payment, an order, a
//! transfer, sending a message. The client makes one key per operation (a UUID v4), keeps it
//! across its retries of that operation, and never reuses it for another. GET, PUT and DELETE
//! are idempotent by definition and need none.
//!
//! # Scoping by tenant
//!
//! ```
//! # fn demo(idem: idem_core::Idempotency) {
//! let layer = idem_http::IdempotencyLayer::builder(idem)
//!     .scope(|parts| {
//!         let tenant = parts.headers.get("x-tenant-id")?.to_str().ok()?;
//!         Some(format!("tenant:{tenant}"))
//!     })
//!     .build();
//! # let _ = layer; }
//! ```
//!
//! The scope is part of the stored key: digest anything secret, such as a session cookie,
//! before returning it.
//!
//! # CORS
//!
//! Browsers send `Idempotency-Key` only when the CORS preflight allows it, and let scripts read
//! `Idempotent-Replayed` only when it is exposed: add `Idempotency-Key` to
//! `Access-Control-Allow-Headers` and `Idempotent-Replayed` to
//! `Access-Control-Expose-Headers` (with tower-http's `CorsLayer`, `allow_headers` and
//! `expose_headers`). Put the CORS layer outside this one, so that preflight `OPTIONS`
//! requests never reach it.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod answer;
mod body;
mod canonical_json;
mod config;
mod fingerprint;
mod key_header;
mod layer;
pub mod problem;
mod scope;
mod service;
mod stored;

pub use body::{Body, BoxError};
pub use config::{
    stored_by_default, IdempotencyLayerBuilder, MismatchStatus, DEFAULT_MAX_REQUEST_BODY,
    DEFAULT_MAX_RESPONSE_BODY,
};
pub use key_header::{IDEMPOTENCY_KEY, MAX_HEADER_KEY_LEN};
pub use layer::IdempotencyLayer;
pub use service::{IdempotencyService, ResponseFuture};
pub use stored::{DEFAULT_REPLAY_HEADERS, IDEMPOTENT_REPLAYED};

/// The `tracing` target of every event this crate emits.
pub(crate) const TARGET: &str = "idem::http";
