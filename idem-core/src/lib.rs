//! The runtime of **idem**: idempotency keys for async Rust.
//!
//! A function made idempotent runs **at most once per key** while the key's record lives. A
//! retry gets the first call's result back, a duplicate that arrives while the first call runs is
//! told so ([`Error::InProgress`], HTTP 409), and a retry with the same key but other arguments is
//! refused ([`Error::Mismatch`], HTTP 422).
//!
//! Most code uses the `#[idempotent]` attribute (feature `macros`, on by default) on top of an
//! installed [`Idempotency`] handle; the same engine is callable directly with
//! [`Idempotency::run`], which also tells whether a value was replayed.
//!
//! ```
//! use idem_core::{Call, Fingerprint, Idempotency};
//! # use idem_core::{*, store::*};
//! # use std::sync::Mutex; use std::collections::HashMap;
//! # #[derive(Default)] struct TinyStore(Mutex<HashMap<Key, Record>>);
//! # #[async_trait::async_trait] impl Store for TinyStore {
//! #   async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
//! #     let mut map = self.0.lock().unwrap();
//! #     match map.get(key) { Some(r) if r.is_live(claim.now()) => Ok(Reservation::Existing(r.clone())),
//! #       _ => { map.insert(key.clone(), Record::InProgress(claim.record().clone())); Ok(Reservation::Reserved(claim.record().clone())) } } }
//! #   async fn complete(&self, key: &Key, _: &OwnerToken, c: &Completed) -> Result<(), StoreError> {
//! #     self.0.lock().unwrap().insert(key.clone(), Record::Completed(c.clone())); Ok(()) }
//! #   async fn release(&self, key: &Key, _: &OwnerToken) -> Result<(), StoreError> { self.0.lock().unwrap().remove(key); Ok(()) }
//! #   async fn renew(&self, _: &Key, _: &OwnerToken, _: Timestamp) -> Result<(), StoreError> { Ok(()) }
//! #   async fn record_step(&self, _: &Key, _: &OwnerToken, _: &str, _: &[u8], _: Timestamp) -> Result<(), StoreError> { Ok(()) }
//! #   async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> { Ok(self.0.lock().unwrap().get(key).cloned()) }
//! #   async fn delete(&self, key: &Key) -> Result<(), StoreError> { self.0.lock().unwrap().remove(key); Ok(()) }
//! # }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), idem_core::Error> {
//! # let store = TinyStore::default();
//! // `store` is any `Store`: idem_stores::memory::MemoryStore, RedisStore, DynamoDbStore...
//! let idem = Idempotency::new(store);
//! let mut charges = 0;
//! for attempt in 0..3 {
//!     let key = idem.key("payments.charge").part("order-42").finish()?;
//!     let call = Call::new(key, Fingerprint::of(&("order-42", 1_000u64))?);
//!     let receipt = idem
//!         .run(call, async {
//!             charges += 1;
//!             Ok::<_, idem_core::Error>(format!("receipt-{charges}"))
//!         })
//!         .await?;
//!     assert_eq!(receipt.value, "receipt-1");
//!     assert_eq!(receipt.replayed, attempt > 0);
//! }
//! assert_eq!(charges, 1);
//! # Ok(()) }
//! ```
//!
//! # Semantics
//!
//! - The key is reserved (an in-progress record with an owner token and a lease) **before** the
//!   function runs; only the caller that reserved it runs it.
//! - `Ok` values are stored for the TTL (default 24 h, counted from completion) and replayed.
//! - An `Err` releases the key by default; a `store_err` policy stores chosen errors instead.
//! - A panic or a dropped future after the function started holds the key until its lease
//!   passes, as a crash would ([`OnAbort`] chooses `Release` or `Fail` instead); before the
//!   function started, the key is released.
//! - The lease (default 30 s) is renewed every third of it until the outcome is stored; when a
//!   process dies, another caller with the same arguments takes the key over once the lease has
//!   passed. Complete, release and renew are fenced by the owner token, so a stale owner gets
//!   [`Error::NotRecorded`] and never overwrites the new owner's record.
//! - Inside the function, [`context`] gives the key, the attempt, a fencing token that grows
//!   with every reservation, and a lease-lost signal; [`downstream_key`] gives the key to send
//!   to a downstream provider for an operation, the same in every attempt of the call.
//! - A function whose side effects come one after another can record each as a [`step`]: a
//!   retry that takes over after a crash replays the finished steps from the record and runs
//!   only the rest.
//! - Every failure after the function ran is [`Error::NotRecorded`]: HTTP 500, not retryable.
//!   When the answer itself cannot be kept (the store refuses it as too large, or it cannot be
//!   encoded), the key is completed as having left no outcome, so its retries get
//!   [`Error::Aborted`] (the same 500) for the TTL: never "in progress", never a second run.
//! - A store failure fails the call closed: the function does not run ([`Error::Store`]).
//! - Keys encode their parts unambiguously and include a namespace, the function's name and an
//!   optional scope (see [`KeyBuilder`]).
//! - With [`Idempotency::with_replay_cache`], completed records are also kept in the process
//!   ([`ReplayCache`], bounded, off by default), so replaying a hot key makes no store call.
//! - With [`Idempotency::with_quota`], a scope over its [`Quota`] gets
//!   [`Error::QuotaExceeded`] (HTTP 429) for new keys, and its used keys still replay.
//!
//! # Writing a store
//!
//! Implement [`store::Store`]: the [`store`] module holds the contract and the records a store
//! keeps, and the `idem-conformance` crate checks a store against every semantic above.
//!
//! # Where things are
//!
//! The modules, in the order a call flows through them:
//!
//! - `handle` and `global`: the [`Idempotency`] handle (store, clock, namespace, replay cache)
//!   and the one [`install`]ed for the attribute;
//! - `key` builds the [`Key`] from its parts and checks function names; `fingerprint` hashes
//!   the arguments into a [`Fingerprint`] (`fingerprint::canonical` serialises them, numbers
//!   by the rule of [`json`], which also reads JSON text canonically);
//! - `call`: one [`Call`] and its options, its [`ErrorPolicy`] and [`OnAbort`], and the body's
//!   [`CallContext`], and how its value is stored ([`OutcomeCodec`], JSON by default);
//! - `engine`: reserves the key, runs the body at most once and settles what it answered or
//!   how it panicked (`engine::settle`); `engine::guard` settles a call dropped mid-way;
//! - `lease`: the lease a running call holds, its `renewal`, the `fencing` token and the
//!   `retry` of a fenced write while the lease lasts;
//! - `steps`: the [`step`]s a body records as it goes (`steps::journal`), replayed after a
//!   takeover;
//! - [`store`]: the [`Store`](store::Store) contract and the records a store keeps; `replay_cache` keeps
//!   completed records in the process too ([`ReplayCache`]); `quota` bounds what one scope
//!   may keep ([`Quota`], [`ScopeQuota`]); `seal` (feature `seal`) keeps outcomes and step
//!   values sealed and keys digested in the store;
//! - [`Error`]; [`Clock`], which tests move by hand; [`guide`], the long explanations;
//! - `__private01`: what the `#[idempotent]` expansion calls, not an API.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod call;
mod clock;
mod engine;
mod error;
mod fingerprint;
mod global;
mod handle;
pub mod json;
mod key;
mod lease;
mod operator;
mod quota;
mod replay_cache;
#[cfg(feature = "seal")]
#[cfg_attr(docsrs, doc(cfg(feature = "seal")))]
pub mod seal;
mod steps;
pub mod store;
pub mod telemetry;

#[doc = include_str!("../docs/guide.md")]
pub mod guide {}

#[doc(hidden)]
pub mod __private01;

pub use call::abort::OnAbort;
pub use call::begun::{Begun, PendingCall};
pub use call::codec::{JsonCodec, OutcomeCodec};
pub use call::context::{context, CallContext};
pub use call::downstream::{
    downstream_key, next_downstream_key, step_downstream_key, DownstreamKey, DOWNSTREAM_KEY_PREFIX,
};
pub use call::policy::{ErrorPolicy, ReleaseErrors, StoreErrorsWhen};
pub use call::replay::Replay;
pub use call::step::step;
pub use call::{Answered, Call, DEFAULT_LEASE, DEFAULT_TTL};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{BoxError, Error, StoreError};
pub use fingerprint::{Fingerprint, Fingerprinter, ParseFingerprintError};
pub use global::{install, installed};
pub use handle::{Idempotency, DEFAULT_NAMESPACE};
pub use key::names::check_function_names;
pub use key::{Key, KeyBuilder, KeyPart, MAX_KEY_LEN};
pub use operator::{Inspection, RecordState, ReleaseReport};
pub use quota::{Quota, QuotaExceeded, QuotaPermit, ScopeQuota};
pub use replay_cache::{ReplayCache, DEFAULT_REPLAY_CACHE_MAX_AGE};
pub use steps::journal::MAX_STEP_NAME_LEN;

/// The `tracing` target of every event idem-core emits.
pub(crate) const TARGET: &str = idem_protocol::log::CORE;

#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use idem_macros::idempotent;

/// The examples of the `#[idempotent]` documentation, which is written in idem-macros (a crate
/// that cannot depend on this one), compiled and run as doctests of this crate.
#[cfg(all(doctest, feature = "macros"))]
#[doc = include_str!("../../idem-macros/src/attribute.md")]
pub struct IdempotentDocTests;
