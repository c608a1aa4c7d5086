//! The DynamoDB store (feature `dynamodb`): one item per key, written only with conditional
//! requests, so that exactly one caller reserves a key.
//!
//! ```no_run
//! # async fn demo() -> Result<(), idem_core::BoxError> {
//! # let client: aws_sdk_dynamodb::Client = unimplemented!();
//! // `client` comes from your own configuration, e.g.
//! // aws_sdk_dynamodb::Client::new(&aws_config::load_from_env().await)
//! use idem_stores::dynamodb::DynamoDbStore;
//! let store = DynamoDbStore::new(client, "idempotency");
//! let idem = idem_core::Idempotency::new(store);
//! idem_core::install(idem);
//! # Ok(()) }
//! ```
//!
//! idem-stores does not configure the client: credentials, region, endpoint, HTTP client and
//! retries are yours (`aws-config` does it from the environment). The store only needs a table
//! whose partition key is a string; [`DynamoDbStore::create_table`] makes one for development.
//!
//! # The item
//!
//! One item per key. Attribute names are the defaults of [`AttributeNames`]:
//!
//! | attribute | type | in-progress record | completed record |
//! |---|---|---|---|
//! | `pk` | S | key prefix, `\|`, idempotency key ([`Key::with_prefix`](idem_core::Key::with_prefix)) | same |
//! | `state` | S | `in_progress` | `completed` |
//! | `fingerprint` | S | the arguments' SHA-256, hex | same |
//! | `live_until_ms` | N | lease deadline, ms since the epoch | expiry, ms since the epoch |
//! | `ttl` | N | `live_until_ms` plus [`LEASE_GRACE`](idem_core::LEASE_GRACE), in seconds, rounded up | `live_until_ms` in seconds, rounded up |
//! | `owner` | S | owner token | the token of the owner that completed it |
//! | `fencing_token` | N | the reservation's fencing token | — |
//! | `attempt` | N | 1, one more per takeover by the same call | — |
//! | `outcome` | S | — | `ok`, `err` or `aborted` |
//! | `body` | S | — | the serialised value (JSON text; B if it is not UTF-8); absent when aborted |
//!
//! A record counts while `now < live_until_ms`, with `now` from the caller's clock. idem checks
//! that on every read and in every conditional write; the `ttl` attribute only lets DynamoDB's
//! TTL sweeper delete dead items, which it may do up to days late.
//!
//! # The requests
//!
//! Every read is strongly consistent. Every write is a single conditional request on the item,
//! so each operation is atomic.
//!
//! - **reserve**: `PutItem` of the in-progress item with the condition
//!   `attribute_not_exists(pk) OR (state = completed AND live_until_ms <= :now)` (the expiry
//!   comparison guarded by `attribute_type(live_until_ms, N)`) and
//!   `ReturnValuesOnConditionCheckFailure = ALL_OLD`: when the condition fails, the error carries
//!   the item, so a replay, a conflict or a mismatch costs this one request.
//! - **takeover**: when that item is an in-progress record whose lease passed (with the claim's
//!   fingerprint, or abandoned: lease passed more than [`LEASE_GRACE`](idem_core::LEASE_GRACE)
//!   ago), a second `PutItem` writes the record of
//!   [`InProgress::taking_over`](idem_core::InProgress::taking_over) (attempt and fencing token
//!   counted on from the old item) on the condition `state = in_progress AND owner = :previous
//!   AND live_until_ms = :previous_lease`: the item is still exactly the record read. A put can't
//!   compute the next attempt and token from the old item, so a takeover costs two requests.
//! - **complete**: `PutItem` of the completed item on `state = in_progress AND owner = :owner`.
//!   The item's size is checked first ([`item_size`], conservatively): a record over
//!   [`MAX_ITEM_SIZE`] bytes (DynamoDB allows 400 KB) is refused with
//!   [`ItemTooLarge`] in [`StoreError::Rejected`](idem_core::StoreError::Rejected) before any
//!   request, so the engine does not retry it and the caller gets `idem_core::Error::Rejected`.
//!   A failed condition returns the old item too (`ALL_OLD`), at no extra request.
//! - **release**: `DeleteItem` on the same owner condition.
//! - **renew**: `UpdateItem` setting `live_until_ms` and `ttl`, on the same owner condition.
//! - **get**: `GetItem` with `ConsistentRead`.
//! - **delete**: unconditional `DeleteItem`.
//! - **waiting** for an in-flight duplicate (`wait = "..."`): `GetItem` of the state attribute
//!   only, consistent, every 10 ms backing off to 200 ms, until the record is no longer in
//!   progress; then one reserve again.
//!
//! A failed owner condition is [`StoreError::LeaseLost`](idem_core::StoreError::LeaseLost); an
//! item with missing or ill-typed attributes is
//! [`StoreError::Corrupt`](idem_core::StoreError::Corrupt); any other failure (unreachable
//! endpoint, throttling after the client's retries, a server error) is
//! [`StoreError::Backend`](idem_core::StoreError::Backend) with a [`RequestFailed`] inside, so
//! the caller gets `idem_core::Error::Store` and the function does not run.
//!
//! # Retried requests
//!
//! The SDK retries throttled requests, server errors and timeouts, so a write may land twice
//! when the answer to its first attempt was lost. Each write tolerates that: a reserve whose
//! condition fails on an in-progress item with its own owner token wrote that item itself and
//! counts as reserved; a completion whose condition fails on the completed item it was writing,
//! with its own owner token, succeeded; a renewal simply applies again. A retried release finds
//! no item and reports [`StoreError::LeaseLost`](idem_core::StoreError::LeaseLost), which the
//! engine only logs.
//!
//! A call that runs the function therefore costs two requests (reserve, then complete or
//! release), a replay, a conflict or a mismatch one, a takeover one more, plus one renewal per
//! third of the lease until the outcome is stored.
//!
//! # Global Tables
//!
//! DynamoDB checks a condition against the item in the region that receives the write, and
//! replicates between regions afterwards, last writer winning. With a Global Table, two callers
//! in two regions can therefore both reserve one key and both run the function. Keep idem's
//! table in one region (callers elsewhere pay the latency), or route every call for a key to one
//! region, and pass [`CallContext::key`](idem_core::CallContext::key) to the downstream provider
//! as its idempotency key so that it deduplicates what slips through.

mod builder;
mod error;
mod item;
mod lease;
mod names;
mod steps;
mod store;
mod table;
mod takeover;
mod wait;

pub use builder::DynamoDbStoreBuilder;
pub use error::{ItemTooLarge, KeyTooLong, RequestFailed, StepTooLarge};
pub use item::{item_size, MAX_ITEM_SIZE};
pub use names::AttributeNames;
pub use store::DynamoDbStore;
