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
//! // A missing table, a wrong key, a sort key or TTL off stops the service here, named.
//! store.verify().await?;
//! let idem = idem_core::Idempotency::new(store);
//! idem_core::install(idem);
//! # Ok(()) }
//! ```
//!
//! idem-stores does not configure the client: credentials, region, endpoint, HTTP client and
//! retries are yours (`aws-config` does it from the environment). The store only needs a table
//! whose partition key is a string; [`DynamoDbStore::create_table`] makes one for development.
//! [`DynamoDbStore::verify`] checks a table (and the credentials) at start-up. At run time, a
//! missing table or a key that does not match the table fails the call as
//! [`StoreError::Rejected`](idem_core::StoreError::Rejected) with a [`Misconfigured`]: not
//! retryable, unlike an outage.
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
//! | `ttl` | N | `live_until_ms` plus [`LEASE_GRACE`](idem_core::store::LEASE_GRACE), in seconds, rounded up, or `steps_ttl` if that is later | `live_until_ms` in seconds, rounded up |
//! | `owner` | S | owner token | the token of the owner that completed it |
//! | `fencing_token` | N | the reservation's fencing token | — |
//! | `attempt` | N | 1, one more per takeover by the same call | — |
//! | `outcome` | S | — | `ok`, `err` or `aborted` |
//! | `body` | S | — | the serialised value (JSON text; B if it is not UTF-8 or starts with a zero byte, as idem-http's frame and a sealed value do); absent when aborted |
//! | `steps` | M | the recorded [steps](idem_core::step): each one's serialised value (B, byte for byte) under its name; empty until the first | — |
//! | `steps_kept_until_ms` | N | until when the steps hold the key, ms since the epoch; from the first step | — |
//! | `steps_ttl` | N | `steps_kept_until_ms` in seconds, rounded up; from the first step | — |
//!
//! A table shared with the application's other items (a single-table design) may have a sort
//! key too ([`DynamoDbStoreBuilder::sort_key`], [`SortKey`]): the idempotency key (with the
//! prefix) then goes in the sort key and one value for every record in the partition key
//! ([`SortKey::holding_key`], the layout of Powertools' `sort_key_attr` and `static_pk_value`),
//! or in the partition key with one sort key value ([`SortKey::fixed`]). Every request names
//! the item by both; nothing else changes, except that a key held in a sort key is at most
//! 1024 bytes, and that listing and purging `Query` the one partition instead of scanning the
//! table.
//!
//! A record counts while `now < live_until_ms`, with `now` from the caller's clock. idem checks
//! that on every read and in every conditional write; the `ttl` attribute only lets DynamoDB's
//! TTL sweeper delete dead items, which it may do up to days late. It never goes below
//! `steps_ttl`, so the sweeper leaves a record alone while its steps hold the key.
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
//!   fingerprint, or abandoned: lease passed more than [`LEASE_GRACE`](idem_core::store::LEASE_GRACE)
//!   ago and no steps kept), a second request writes the record of
//!   [`InProgress::taking_over`](idem_core::store::InProgress::taking_over) (attempt and fencing token
//!   counted on from the old item) on the condition `state = in_progress AND owner = :previous
//!   AND live_until_ms = :previous_lease`: the item is still exactly the record read. A write
//!   can't compute the next attempt and token from the old item, so a takeover costs two
//!   requests. The same call's takeover is an `UpdateItem` of the owner, lease, fencing token,
//!   attempt and `ttl` that leaves the steps as they are (a step the previous owner recorded
//!   after the read is kept: the condition also requires `steps_ttl <= :ttl`) and returns the
//!   whole new item (`ReturnValues = ALL_NEW`), so the steps come with the answer. Another
//!   call's is a `PutItem` of its record with no steps, on the condition also requiring
//!   `steps_kept_until_ms <= :now`: old step data goes with the old item, and a step recorded
//!   after the read keeps the key.
//! - **complete**: `PutItem` of the completed item on `state = in_progress AND owner = :owner`.
//!   The item's size is checked first ([`item_size`], conservatively): a record over
//!   [`MAX_ITEM_SIZE`] bytes (DynamoDB allows 400 KB) is refused with
//!   [`ItemTooLarge`] in [`StoreError::Rejected`](idem_core::StoreError::Rejected) before any
//!   request, so the engine does not retry it and the caller gets `idem_core::Error::Rejected`.
//!   A failed condition returns the old item too (`ALL_OLD`), at no extra request.
//! - **record_step**: `UpdateItem` `SET steps.#name = :value, steps_kept_until_ms = :kept,
//!   steps_ttl = :steps_ttl, ttl = :ttl` on the owner condition, `attribute_type(steps, M)`, and
//!   `steps_kept_until_ms <= :kept AND ttl <= :ttl`, with `ALL_OLD` on failure. DynamoDB has no
//!   `max`, so the condition keeps the update from lowering either: when the item holds later
//!   values (a step recorded with a clock ahead of this one, or a lease that outlasts the
//!   step's TTL), a second update writes the larger ones it returned. A step whose record would
//!   be over [`MAX_ITEM_SIZE`] on its own is refused with [`StepTooLarge`] in
//!   [`StoreError::Rejected`](idem_core::StoreError::Rejected) before any request; one that
//!   outgrows the item together with the steps before it is refused by DynamoDB and reported
//!   the same way. An empty step name is refused too (DynamoDB has no empty attribute names).
//! - **release**: `DeleteItem` on the same owner condition and `size(steps) = 0`. A record with
//!   steps fails it and comes back (`ALL_OLD`); an `UpdateItem` then sets `live_until_ms` to 0
//!   on the owner condition, keeping the steps and `ttl`: two requests, since a delete can't
//!   turn into an update and the store can't know which it needs before the first answer.
//! - **renew**: `UpdateItem` setting `live_until_ms` and `ttl = if_not_exists(steps_ttl,
//!   :lease_ttl)` on the owner condition and `steps_ttl >= :lease_ttl` (when present): `ttl`
//!   follows the lease, or stays at the steps' while they outlast it. When the lease outlasts
//!   the steps, a second update sets `ttl` to the lease's.
//! - **get**: `GetItem` with `ConsistentRead`.
//! - **delete**: unconditional `DeleteItem`.
//! - **waiting** for an in-flight duplicate (`wait = "..."`): `GetItem` of the state and lease
//!   attributes only, consistent, every 10 ms backing off to 200 ms, until the record is no
//!   longer in progress, or released with its steps kept (lease 0); then one reserve again.
//!
//! A failed owner condition is [`StoreError::LeaseLost`](idem_core::StoreError::LeaseLost); an
//! item with missing or ill-typed attributes is
//! [`StoreError::Corrupt`](idem_core::StoreError::Corrupt); any other failure (unreachable
//! endpoint, throttling after the client's retries, a server error) is
//! [`StoreError::Backend`](idem_core::StoreError::Backend) with a [`RequestFailed`] inside, so
//! the caller gets `idem_core::Error::Store` and the function does not run.
//!
//! # Listing and purging
//!
//! The store offers operators its [`Inventory`](idem_core::store::Inventory)
//! ([`Idempotency::list`](idem_core::Idempotency::list), the `idem` command). A page is one
//! consistent `Scan` that reads as many items as the page's limit, keeps those whose key
//! `begins_with` the store's prefix and the listing's (and that hold the sort key's value, if
//! the table has one), and hands its `LastEvaluatedKey`'s key on as the cursor (with the keys
//! in the sort key, [`SortKey::holding_key`], a `Query` of the records' partition instead): a
//! page may hold fewer records than the limit, or none, while more remain, and the order is
//! the table's, not the keys'. An item that cannot be read is listed
//! as [`StoreError::Corrupt`](idem_core::StoreError::Corrupt), not skipped, and one under the
//! prefix whose key is no idempotency key after it (too long, no `|`) in
//! [`ListPage::unkeyed`](idem_core::store::ListPage::unkeyed). A purge scans the
//! store's items for expired ones (completed past their expiry, in progress and abandoned)
//! and deletes each with a `DeleteItem` conditioned on it still being expired, so an item
//! reserved again or renewed since the scan is kept. A listing or a purge reads the whole
//! table, in read capacity: DynamoDB's TTL sweeper deletes expired items at no cost, if later.
//!
//! # Retried requests
//!
//! The SDK retries throttled requests, server errors and timeouts, so a write may land twice
//! when the answer to its first attempt was lost. Each write tolerates that: a reserve whose
//! condition fails on an in-progress item with its own owner token wrote that item itself and
//! counts as reserved; a completion whose condition fails on the completed item it was writing,
//! with its own owner token, succeeded; a renewal, a step and the release of a record with steps
//! simply apply again. A retried release of a record without steps finds no item and reports
//! [`StoreError::LeaseLost`](idem_core::StoreError::LeaseLost), which the engine only logs.
//!
//! A call that runs the function therefore costs two requests (reserve, then complete or
//! release), a replay, a conflict or a mismatch one, a takeover one more, plus one renewal per
//! third of the lease until the outcome is stored, one request per step it records (a step
//! replayed from the record costs none: its value came with the reservation), and one more for
//! a release that keeps steps.
//!
//! # Timeouts
//!
//! The SDK sets no time limit on an answer by default, so an endpoint that accepts a connection
//! and never answers would hold a call (and its caller) for as long as the connection lives.
//! The store therefore gives its client a timeout for connecting, for each attempt of a
//! request and for a whole request with the SDK's retries, taking each from, in order: the
//! [builder](DynamoDbStoreBuilder) (`connect_timeout`, `attempt_timeout`,
//! `operation_timeout`), the client's own timeout config, and the defaults
//! [`DEFAULT_CONNECT_TIMEOUT`] (3 s), [`DEFAULT_ATTEMPT_TIMEOUT`] (3 s) and
//! [`DEFAULT_OPERATION_TIMEOUT`] (10 s). A request that times out is a
//! [`StoreError::Backend`](idem_core::StoreError::Backend): the caller gets
//! `idem_core::Error::Store` and the function does not run (a write after the function ran is
//! retried by the engine while the lease holds). The Redis store's equivalents are its
//! connection and response timeouts.
//!
//! # Global Tables
//!
//! DynamoDB checks a condition against the item in the region that receives the write, and
//! replicates between regions afterwards, last writer winning. With a Global Table, two callers
//! in two regions can therefore both reserve one key and both run the function. Keep idem's
//! table in one region (callers elsewhere pay the latency), or route every call for a key to one
//! region, and pass the call's [downstream key](idem_core::downstream_key) to the downstream
//! provider as its idempotency key so that it deduplicates what slips through.

mod builder;
mod codec;
mod error;
mod failed;
mod inventory;
mod lease;
mod names;
mod pages;
mod reserve;
mod sort_key;
mod steps;
mod store;
mod table;
mod wait;

pub use builder::{
    DynamoDbStoreBuilder, DEFAULT_ATTEMPT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_OPERATION_TIMEOUT,
};
pub use codec::{item_size, MAX_ITEM_SIZE};
pub use error::{ItemTooLarge, KeyTooLong, Misconfigured, RequestFailed, StepTooLarge};
pub use names::AttributeNames;
pub use sort_key::SortKey;
pub use store::DynamoDbStore;
