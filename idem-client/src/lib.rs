//! The client half of the `Idempotency-Key` contract, as a
//! [`reqwest-middleware`](reqwest_middleware) middleware: a key minted once per operation and
//! kept across its retries, retries for the answers worth retrying, a 409 waited out, a 422
//! returned at once, and a "handled, not recorded" 500 handed back with its key.
//!
//! ```no_run
//! # async fn run() -> Result<(), reqwest_middleware::Error> {
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(idem_client::IdempotentRetry::default())
//!     .build();
//! let response = client
//!     .post("https://api.example.com/payments")
//!     // Whose key it is: idem-http keeps each client's keys apart by its credentials, and
//!     // refuses a keyed request without any (an `Unscoped` error here).
//!     .bearer_auth("the caller's token")
//!     .header("content-type", "application/json")
//!     .body(r#"{"order":"o_42","amount":1250}"#)
//!     .send()
//!     .await?;
//! if idem_client::was_replayed(&response) {
//!     // The server answered from its record: the payment was made by an earlier attempt.
//! }
//! println!("key {:?}: {}", idem_client::key_of(&response), response.status());
//! # Ok(())
//! # }
//! ```
//!
//! # What it does
//!
//! - **Keys.** A POST or PATCH without an `Idempotency-Key` header gets a fresh one (a random
//!   UUID, version 4: it tells the server nothing of when or where it was made), set before the
//!   first attempt and kept for every retry of that `send()`; sent from inside an idempotent
//!   call, the call's downstream key of its operation instead (see
//!   [below](#inside-an-idempotent-call)). A key the caller set is used as it
//!   is, whatever the method. Every other request is left alone: no key, one attempt. Two
//!   `send()`s are two operations, with two keys: to repeat an operation later (after a crash,
//!   from a queue), set its key yourself.
//! - **Retries** of a keyed request, with the same key, until [`max_elapsed`] (20 s) runs
//!   out, or [`max_attempts`] when you set a count (none by default: at least 8 attempts fit
//!   in 20 s when each fails at once, which loses 1 send in 256 at 50% lost answers; see
//!   [`DEFAULT_MAX_ATTEMPTS`]):
//!
//!   | outcome | retried | wait |
//!   |---|---|---|
//!   | no connection (`is_connect`), a timeout (`is_timeout`), or the connection reset or closed before the answer (`is_request`) | yes: the answer may be lost, which is what the key is for | backoff |
//!   | any other error: a request that cannot be built, a redirect loop, another middleware's error | no | |
//!   | 409 (taken as "in progress", as the IETF draft and Stripe mean it) | yes, to get the first attempt's answer; not idem-http's `KEY_REUSED` (its `mismatch_status(409)`) | `Retry-After`, at most [`max_retry_after`] (10 s); else backoff |
//!   | 429, 502, 503, 504 | yes | `Retry-After`, at most 10 s; else backoff |
//!   | 429 of idem-http's `QUOTA_EXCEEDED`, or 503 of its `STORE_FULL`, whose `Retry-After` is longer than [`max_retry_after`], or missing | no: the room frees up later than the client waits | |
//!   | 500 | yes: a server that lets go of the key on a failure expects the retry | `Retry-After`, else backoff |
//!   | 500, 502, 503, 504 whose [problem type](https://www.rfc-editor.org/rfc/rfc9457) says "handled, not recorded" (idem-http's, and [those you name](IdempotentRetryBuilder::not_recorded_problem_type)), or whose `application/problem+json` document cannot be read (over 64 KiB, cut short, not JSON) | **no**: it may have taken effect; check before resending | |
//!   | 400, 422, every other 4xx (408 included), 501, 505, other 5xx | no | |
//!   | 1xx, 2xx, 3xx | no | |
//!   | a request body that is a stream (it cannot be sent twice) | **no**: sent once, with its key | |
//!
//!   Backoff is exponential from 200 ms to 5 s, each wait drawn between half and all of its
//!   step. A wait that would end after [`max_elapsed`] is not begun: the last outcome is
//!   returned. An attempt in flight is never cut short: bound it with reqwest's timeouts
//!   (`reqwest::Client::new()` has none). Keep [`max_elapsed`] under the server's lease (see
//!   there).
//! - **What you get**: the final response, as reqwest gives it, with its key ([`key_of`]) and
//!   whether it was replayed ([`was_replayed`]); or, when no attempt got an answer, an
//!   error holding a [`SendError`] with the key, the attempt count, whether the operation
//!   [may have taken effect](SendError::may_have_been_processed) and the last error. Take the
//!   key before reading the body: a body that fails halfway is not retried.
//!
//!   A keyed send's error is always a `reqwest_middleware::Error::Middleware` holding the
//!   [`SendError`], so its own `is_timeout()`, `is_connect()` and `url()` say nothing: ask
//!   [`SendError::of(&error)`](SendError::of) and its
//!   [`last_error()`](SendError::last_error).
//! - **Refused for want of credentials**: idem-http's 400 `UNSCOPED` (a keyed request without
//!   the `Authorization` its server scopes keys by) comes back as an [`Unscoped`] error that
//!   says so, not as a bare 400.
//! - **Tracing**: an event (target `idem::client`, under `idem` with the server's) per retry, with the key, attempt, reason and
//!   wait, and one when it gives up.
//!
//! **Order in the chain.** `ClientBuilder::with` adds middlewares from the outside in: the
//! first added runs first, once per `send()`. Add this one before the middlewares that must
//! run on every attempt (request signing, say), and after those that run once per `send()`. A
//! generic retry middleware is best left out: inside this one it would retry what this one
//! refuses to (a "not recorded" 500, say); outside it, it would resend the request, which this
//! one keys again with the key it minted for the `send()` after an error, but with a new key
//! after a response (a 5xx this one gave up on, say): a second operation. The same goes for the retry
//! policies of reqwest's own `ClientBuilder`: they run inside every middleware.
//!
//! # Inside an idempotent call
//!
//! A request sent from inside an idempotent call (an `#[idempotent]` body, a handler behind
//! idem-http's layer, an idem-lambda handler: wherever `idem_core::context()` is `Some`) is an
//! effect of that call, and a retry that takes the call over after a crash sends it again. So
//! it carries no random key but the call's **downstream key** of its operation
//! ([`idem_core::downstream_key`]): the same in every attempt of the call, in every process,
//! so that the service called recognises the operation and answers as it did the first time,
//! and different for every operation, call and principal, revealing nothing of the call's key.
//! Nothing to write: a handler that calls a provider inside a [step](idem_core::step) is
//! covered as it stands.
//!
//! ```no_run
//! type BoxError = Box<dyn std::error::Error + Send + Sync>;
//!
//! # async fn run(client: reqwest_middleware::ClientWithMiddleware) -> Result<(), BoxError> {
//! // In the body of an idempotent call: the charge is sent with the same key in every attempt.
//! let status = idem_core::step("charge", async {
//!     let response = client
//!         .post("https://payments.example.com/v1/charges")
//!         .body(r#"{"amount":1250}"#)
//!         .send()
//!         .await?;
//!     Ok::<_, BoxError>(response.status().as_u16())
//! })
//! .await?;
//! # Ok(()) }
//! ```
//!
//! The operation a request performs is named, first match wins:
//!
//! 1. by the caller: [`operation("charge")`](operation), set with reqwest-middleware's
//!    `RequestBuilder::with_extension`. One name, one key: the request sent again under the
//!    same name (a retry loop of the body's own) is the same operation.
//! 2. otherwise: by its method and URL path (`POST /v1/charges/ord_42`), the
//!    [step](idem_core::step) that sends it, if one does, and how many times the step (or the
//!    call) sent that before ([`idem_core::next_downstream_key`]). One provider call per step
//!    needs nothing more. The host is left out, since it may differ between the processes a
//!    takeover moves the call across; ids in the path are fine, since the same call sends the
//!    same path. Requests are numbered per method and path, so two different requests never
//!    trade keys when their order changes between attempts.
//!
//! Two identical requests in one body (a deliberate second charge) are told apart by their
//! names, or by their numbers in the step or call. The numbers are stable because every
//! attempt runs a step's future, or the body, afresh and counts from 1, and a deterministic
//! body sends the same requests in the same order; a body whose requests race (`select!`)
//! should name them.
//!
//! A key the caller set still wins. [`downstream_keys(false)`](IdempotentRetryBuilder::downstream_keys)
//! sends random keys inside calls too. A request sent from a call whose lease is known lost
//! (another caller may run the call now, or the process was paused past the lease) is not
//! sent, nor sent again by a retry once the lease is lost: the error holds an
//! `idem_core::Error::NotRecorded` caused by `LeaseLost`.
//!
//! # The contract, both sides
//!
//! | | the client promises | the server promises |
//! |---|---|---|
//! | key | one unique key per operation; the same key for every retry of it; never reused for another | a key is the client's for the key's lifetime (24 h in idem-http and Stripe) |
//! | first request | | runs the operation once, stores its answer |
//! | retry after a lost answer | same key, same body | replays the stored answer, `Idempotent-Replayed: true` |
//! | retry while the first still runs | waits, then retries | 409, with `Retry-After` in idem-http |
//! | same key, other body | never does it (a bug when it happens) | refuses: 422, nothing runs |
//! | "handled, not recorded" | does not resend blindly: checks the effect | says so (idem-http: 500 [`IDEM_HTTP_NOT_RECORDED`]) |
//! | failures that let go of the key (5xx) | may retry with the same key | runs it again, as if new |
//!
//! The [IETF draft](https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/)
//! and Stripe agree on the shape and differ on details; this client works with both:
//!
//! | | IETF `Idempotency-Key` draft | Stripe | idem-http |
//! |---|---|---|---|
//! | header value | sf-string: `"8e03978e-..."` | bare string, up to 255 characters | both |
//! | key advised | UUID (v4) | UUID v4 | any |
//! | request in flight | 409 | 409 | 409 + `Retry-After` |
//! | other payload | 422 | an `idempotency_error` | 422 |
//! | missing key where required | 400 | n/a | 400 (when required) |
//! | replay marked | not specified | `Idempotent-Replayed: true` | `Idempotent-Replayed: true` |
//! | 5xx | not specified | stored and replayed once the endpoint began | releases the key, except "not recorded" |
//! | expiry | published by the resource | 24 h | 24 h by default |
//!
//! This client sends bare keys, which idem-http and Stripe read; a server that parses the
//! header strictly as the draft does needs
//! [`sf_string_keys(true)`](IdempotentRetryBuilder::sf_string_keys). Stripe's own SDKs mint
//! keys and retry much as this middleware does, and also obey Stripe's `Stripe-Should-Retry`
//! header, which this middleware does not read. Stripe stores a 500 once the endpoint began,
//! so a retry of one there gets the same 500 back: harmless, and bounded by the attempts.
//!
//! [`max_attempts`]: IdempotentRetryBuilder::max_attempts
//! [`max_elapsed`]: IdempotentRetryBuilder::max_elapsed
//! [`max_retry_after`]: IdempotentRetryBuilder::max_retry_after

//! # Versions
//!
//! The middleware is built on reqwest 0.13 and reqwest-middleware 0.5, and re-exports both
//! ([`reqwest`], [`reqwest_middleware`]): build the client from these paths, or depend on the
//! same versions, since a `reqwest::Client` of another version is another type.
//!
//! # Against idem-http
//!
//! The header's name, the key's grammar and the problem types the client reads are
//! [idem-protocol](idem_protocol)'s, the same definitions idem-http answers with.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod config;
mod error;
mod key;
mod middleware;
mod operation;
mod problem;
mod verdict;
mod wait;

/// The reqwest this crate is built on (0.13): build the client with it, so that its types are
/// the ones the middleware takes.
pub use reqwest;
/// The reqwest-middleware this crate is built on (0.5).
pub use reqwest_middleware;

pub use config::{
    IdempotentRetry, IdempotentRetryBuilder, DEFAULT_INITIAL_BACKOFF, DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_BACKOFF, DEFAULT_MAX_ELAPSED, DEFAULT_MAX_RETRY_AFTER, IDEMPOTENCY_KEY,
    IDEM_HTTP_NOT_RECORDED,
};
pub use error::{SendError, Unscoped};
pub use key::{key_of, was_replayed, IdempotencyKey, IDEMPOTENT_REPLAYED};
pub use operation::{operation, Operation};
