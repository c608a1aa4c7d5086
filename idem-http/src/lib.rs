//! Idempotency keys for HTTP APIs: a tower [`Layer`](tower_layer::Layer) for the
//! `Idempotency-Key` header, on the [idem](idem_core) engine. It works with axum, hyper and
//! any tower service of `http` requests (tonic servers included), and, with a feature each,
//! as actix-web middleware (`App::wrap`, the `actix` module), poem middleware
//! (`Route::with`, the `poem` module) and a salvo hoop (`Router::hoop`, the `salvo` module):
//! the same layer on every front end, one contract decided by the same code, and the handler
//! inside the engine's call on each.
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
//! With no configuration, the layer is correct and fails closed; every point below can be
//! changed on [`IdempotencyLayer::builder`]. Give it a
//! [`scope_secret`](IdempotencyLayerBuilder::scope_secret) in production (see
//! [Scopes](#scopes)).
//!
//! - **Methods.** POST and PATCH requests carrying `Idempotency-Key` are handled. Other
//!   methods, and requests without the header, pass through untouched
//!   ([`require_key`](IdempotencyLayerBuilder::require_key) answers 400 instead).
//! - **The key.** An sf-string (`"8e03978e-..."`, as the IETF draft writes it; parameters
//!   after it, `"8e03978e-...";p=1`, are ignored) or a bare token (as Stripe's clients send
//!   it), of 1 to 255 visible ASCII characters. Anything else, or two headers, gets a 400.
//! - **Scope.** Keys belong to a principal: by default the contract's digest of the
//!   `Authorization` header ([`idem_protocol::scope::authorization_scope`]: a SHA-256 of the
//!   credential with its scheme lower-cased, documented exactly there; never stored in
//!   clear), so two clients never share a record. A
//!   keyed request **without a scope** (no `Authorization`) **is refused** with a 400
//!   ([`problem::UNSCOPED`]): its key would be shared with every other such client.
//!   [`unscoped`](IdempotencyLayerBuilder::unscoped) passes such requests through instead,
//!   or, for services whose clients are all one party, gives them one shared key space.
//!   Behind an authentication layer, take the scope from the principal it sets
//!   ([`scope_from_extension`](IdempotencyLayerBuilder::scope_from_extension)), so that a
//!   refreshed token keeps its records; with tenants or cookie sessions, set
//!   [`scope`](IdempotencyLayerBuilder::scope). See [Scopes](#scopes).
//! - **Fingerprint.** Method, path, query (pairs sorted by name; the values of one name in
//!   their order) and body: an `application/json` (or `+json`) body by its value, so key
//!   order, whitespace and escapes don't matter, and numbers count by their exact decimal
//!   value (`1`, `1.0` and `10e-1` match; `12345678901234567890123` and `...124` never do),
//!   by the one rule of [`idem_core::json`] that the attribute and idem-lambda share; any
//!   other body by its bytes; plus the
//!   [headers you list](IdempotencyLayerBuilder::fingerprint_headers). A body over 1 MiB gets
//!   a 413 before anything is reserved.
//! - **Stored.** Responses with status 200 to 499, except those that say "try again" (408,
//!   409, 425, 429, 499), validation answers (400, 415, 422) and authentication answers
//!   (401, 403, 407): see [`stored_by_default`].
//!   Any other response releases the key, so the client can retry it (or correct it and
//!   resend it with the same key).
//! - **Replays are checked again.** A record is data from the store, which others may write:
//!   a replay carries only the headers on the allow-list, never those that frame the message
//!   (`content-length`, `transfer-encoding`, `connection`, `upgrade` and the like: its length
//!   is the server's own), and only a status of 200 to 599 and a body within
//!   [`max_response_body`](IdempotencyLayerBuilder::max_response_body). Any other record is
//!   refused with a 500 ([`problem::FAILED`]), never replayed and never run again (lowering
//!   the limit refuses the larger records already stored, for the rest of their TTL). This
//!   bounds what a record written by someone else can do; it does not prove who wrote it: its
//!   status, body and allow-listed headers (a `location`, say) go out as stored. Keep write
//!   access to the store as narrow as access to the answers it holds.
//! - **Streamed.** A response whose length is not known up front (server-sent events, a
//!   proxied or compressed body) reaches the client frame by frame as the handler produces
//!   it, while the layer keeps a copy; its end (and trailers) are sent once the copy is
//!   stored, so a client that saw the end of a chunked or HTTP/2 body can count on the
//!   replay. See [Streams](#streams).
//! - **Never a second run.** Once the handler has answered with a status that is stored, its
//!   key is never released: a body over the response limit (1 MiB), a body that fails (or
//!   panics) while it is read, or a stream its client abandoned leave the key handled with its
//!   response *not kept*, and every retry and waiter gets a 410
//!   ([`problem::RESPONSE_NOT_KEPT`]) saying so.
//! - **A client that disconnects never cuts the handler off** halfway: the call moves to a
//!   task of its own, finishes, its response is stored, and the client's retry gets the
//!   replay (a request answered at once, a replay or a conflict, costs no task; the handler
//!   runs in the request's task until then, so a task-local an outer middleware scoped around
//!   the request is not one to rely on in it). A
//!   streamed body is the exception: once its client is gone, it is read on only while it
//!   can still be kept (see [Streams](#streams)).
//! - **Steps.** A handler may record its side effects as
//!   [`idem_core::step`]s. When it then answers with a status that is not
//!   stored (a 502 from a failed downstream, say) after a step was recorded, the key is kept for
//!   the same request only: its retry resumes after the recorded steps, and another request with
//!   the key gets the 422.
//!
//! | case | answer |
//! |---|---|
//! | first request | the handler's response |
//! | replay | the stored status, body and trailers, the headers `content-type`, `content-encoding`, `vary`, `location`, `content-location`, `etag`, `last-modified`, `link`, `grpc-encoding`, `grpc-status`, `grpc-message`, `grpc-status-details-bin` (and [yours](IdempotencyLayerBuilder::replay_headers)), and `Idempotent-Replayed: true`; never `Set-Cookie` or `Date` |
//! | replay of a body in a coding the retry does not accept | 406 |
//! | same key still in progress | 409 with `Retry-After: 1` ([`retry_after`](IdempotencyLayerBuilder::retry_after)), or the response once it is done with [`wait`](IdempotencyLayerBuilder::wait) |
//! | same key, other request | 422 (or 400, 409: [`mismatch_status`](IdempotencyLayerBuilder::mismatch_status)) |
//! | handled, response not kept | 410, with the status it was answered with |
//! | bad key, or two | 400 |
//! | body too large | 413 |
//! | a new key from a client over its [`quota`](IdempotencyLayerBuilder::quota) | 429 with `Retry-After`: nothing ran |
//! | store unreachable | 503: nothing ran |
//! | handled, response not recorded | 500: check the effect before retrying |
//!
//! Every error answer is an RFC 9457 `application/problem+json` document whose `type` is one
//! of the [`problem`] constants and whose `detail` names the key (to a gRPC call, a gRPC
//! status instead: see [gRPC](#grpc)).
//!
//! The layer's records need a store: in production a shared one (Redis, DynamoDB,
//! PostgreSQL from `idem-stores`). On the embedded memory store, bound it, so that a flood
//! of keys cannot exhaust the process: `MemoryStore::builder().max_records(100_000).build()`;
//! and give each client a [`quota`](IdempotencyLayerBuilder::quota) below that bound, so that
//! one client cannot fill it for the others.
//!
//! # Streams
//!
//! Server-sent events and other streamed bodies are forwarded as they come, at the pace the
//! client reads them. The copy the layer keeps is bounded by
//! [`max_response_body`](IdempotencyLayerBuilder::max_response_body); past it, the client
//! still gets the whole stream, and retries get the 410. When the client goes away
//! mid-stream, the layer reads on for up to
//! [`abandoned_stream_timeout`](IdempotencyLayerBuilder::abandoned_stream_timeout) (10
//! seconds) so that the retry can have it whole; an endless stream is dropped then, and its
//! key stays handled. Meanwhile duplicates get the 409 (or wait).
//!
//! # Compression
//!
//! Put a compression layer (tower-http's `CompressionLayer`) **outside** this one: the stored
//! body is then the plain one, and each replay is compressed as its retry's
//! `Accept-Encoding` asks. A body the handler itself compresses (or a compression layer
//! inside this one) is stored compressed and replayed with its `Content-Encoding` and
//! `Vary`; a retry whose `Accept-Encoding` does not accept that coding gets a 406
//! ([`problem::ENCODING_NOT_ACCEPTED`]) naming it, rather than bytes it cannot read.
//!
//! # gRPC
//!
//! The layer works in front of a tonic server (`Server::builder().layer(..)`): a unary call
//! carrying `idempotency-key` metadata runs once, and its retries get the stored message,
//! status and trailers. A gRPC answer's status is in its trailers, so it is judged when the
//! call ends, by the HTTP status its `grpc-status` stands for (the mapping of
//! `google.rpc.Code`) and the same [`store_when`](IdempotencyLayerBuilder::store_when):
//!
//! | `grpc-status` | as | by default |
//! |---|---|---|
//! | `OK` | 200 | stored |
//! | `NOT_FOUND` | 404 | stored |
//! | `PERMISSION_DENIED`, `UNAUTHENTICATED` | 403, 401 | released: authentication |
//! | `INVALID_ARGUMENT`, `FAILED_PRECONDITION`, `OUT_OF_RANGE` | 400 | released: validation |
//! | `ABORTED`, `ALREADY_EXISTS`, `RESOURCE_EXHAUSTED`, `CANCELLED` | 409, 409, 429, 499 | released: try again |
//! | `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `UNKNOWN`, `INTERNAL`, `DATA_LOSS`, `UNIMPLEMENTED` | 5xx | released |
//!
//! The layer's own answers are gRPC statuses: in progress is `ABORTED` with
//! `grpc-retry-pushback-ms`; key reused, `FAILED_PRECONDITION`; response not kept,
//! `ALREADY_EXISTS`; store unavailable, `UNAVAILABLE`; a bad key, `INVALID_ARGUMENT`; a
//! body too large or a quota exceeded, `RESOURCE_EXHAUSTED`; not recorded, `UNKNOWN`. The
//! request is read whole (up to the request limit) before the call
//! runs: a keyed call whose request holds other than one message (client streaming, or a
//! plain body sent as `application/grpc`) is refused with `INVALID_ARGUMENT` and runs
//! nothing, since a keyed request either runs under the engine or is refused; a
//! server-streaming call is kept like any stream, and replayed whole when it ended within
//! the limit. A bidirectional call must not carry a key, or the layer would wait for the end
//! of a request its client never ends. gRPC-Web carries its status in the body and is not
//! judged this way.
//!
//! # Which requests should carry keys
//!
//! Those that cause a side effect a retry must not repeat: creating a payment, an order, a
//! transfer, sending a message. The client makes one key per operation (a UUID v4), keeps it
//! across its retries of that operation, and never reuses it for another. GET, PUT and DELETE
//! are idempotent by definition and need none.
//!
//! # Scopes
//!
//! | scope | use it when |
//! |---|---|
//! | default: digest of `Authorization` | API keys or long-lived tokens, and no authentication layer |
//! | [`scope_from_extension::<T>()`](IdempotencyLayerBuilder::scope_from_extension) | an authentication layer sets the principal (user or account id) on the request: refreshed OAuth tokens keep their records; a request without it is refused with a 500 ([`problem::SCOPE_MISSING`]) rather than left unscoped |
//! | [`scope(..)`](IdempotencyLayerBuilder::scope) | tenants, sessions, anything else read from the request head |
//!
//! Scoping by tenant:
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
//! before returning it. Better, give the layer a secret of the server with
//! [`scope_secret`](IdempotencyLayerBuilder::scope_secret): every scope, whichever way it
//! is read, is then stored as its HMAC-SHA256 under that secret. The default digest of
//! `Authorization` is a plain SHA-256: anyone who can read the store can test guesses
//! against it (a dictionary finds `Basic` credentials with a weak password in well under a
//! second), and the layer says so in a warning when it is built without a secret.
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

#[cfg(feature = "actix-web")]
#[cfg_attr(docsrs, doc(cfg(feature = "actix-web")))]
pub mod actix;
mod answer;
mod asked;
mod body;
mod builder;
mod config;
mod contract;
mod detached;
mod grpc;
mod layer;
#[cfg(any(feature = "openapi", feature = "openapi-utoipa6"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "openapi", feature = "openapi-utoipa6")))
)]
pub mod openapi;
#[cfg(feature = "poem")]
#[cfg_attr(docsrs, doc(cfg(feature = "poem")))]
pub mod poem;
mod request;
mod response;
#[cfg(feature = "salvo")]
#[cfg_attr(docsrs, doc(cfg(feature = "salvo")))]
pub mod salvo;
mod service;
mod telemetry;

/// utoipa 5, whose documents [`openapi`] takes with the feature `openapi`: name its types
/// through this path to be sure they are the ones idem-http was built with.
#[cfg(feature = "openapi")]
#[cfg_attr(docsrs, doc(cfg(feature = "openapi")))]
pub use utoipa;
/// utoipa 6, whose documents [`openapi`] takes with the feature `openapi-utoipa6`.
#[cfg(feature = "openapi-utoipa6")]
#[cfg_attr(docsrs, doc(cfg(feature = "openapi-utoipa6")))]
pub use utoipa6;

pub use body::{Body, BodyError, BoxError};
pub use builder::IdempotencyLayerBuilder;
pub use config::{
    MismatchStatus, DEFAULT_ABANDONED_STREAM_TIMEOUT, DEFAULT_MAX_REQUEST_BODY,
    DEFAULT_MAX_RESPONSE_BODY, DEFAULT_NAME,
};
pub use layer::IdempotencyLayer;
pub use request::key_header::{IDEMPOTENCY_KEY, MAX_HEADER_KEY_LEN};
pub use request::scope::{Unscoped, MIN_SCOPE_SECRET_BYTES};
pub use response::hook::Replay;
pub use response::problem;
pub use response::statuses::{
    is_authentication_answer, is_validation_answer, stored_by_default, DEFAULT_RETRY_AFTER,
};
pub use response::stored::{
    NotAStoredResponse, RecordedBody, RecordedResponse, DEFAULT_REPLAY_HEADERS, IDEMPOTENT_REPLAYED,
};
pub use service::{IdempotencyService, ResponseFuture};
pub use telemetry::{HTTP_OUTCOMES, HTTP_REQUESTS_TOTAL};

/// The `tracing` target of every event this crate emits.
pub(crate) const TARGET: &str = idem_protocol::log::HTTP;
