//! `MeteredStore`: every store operation timed and traced.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use metrics::{Key as MetricKey, Label};
use tracing::Instrument;

use super::{STORE_DURATION_SECONDS, STORE_OPERATIONS};
use crate::store::Inventory;
use crate::{
    error::StoreError,
    key::Key,
    store::{Claim, Completed, Lookup, OwnerToken, Probe, Record, Reservation, Store, Timestamp},
    TARGET,
};

/// `idem_store_duration_seconds{store, operation}`.
fn duration_key(store: &'static str, operation: &'static str) -> MetricKey {
    super::function::retained(MetricKey::from_parts(
        STORE_DURATION_SECONDS,
        vec![
            Label::new("store", store),
            Label::new("operation", operation),
        ],
    ))
}

/// What a call asks to learn whether a recorder times its store operations: the histogram of
/// `store`'s reservations.
pub(crate) fn probe_key(store: &'static str) -> MetricKey {
    duration_key(store, STORE_OPERATIONS[Operation::Reserve as usize])
}

/// Operations, as indexes into [`STORE_OPERATIONS`].
#[derive(Clone, Copy)]
enum Operation {
    Reserve,
    Complete,
    Release,
    Renew,
    RecordStep,
    Get,
    Delete,
    Lookup,
}

/// A store with each operation timed into `idem_store_duration_seconds` and run in an
/// `idem.store` span.
pub(crate) struct MeteredStore {
    inner: Arc<dyn Store>,
    /// `idem_store_duration_seconds{store, operation}`, one per operation.
    durations: Vec<MetricKey>,
    /// The store as OpenTelemetry names database systems.
    system: &'static str,
}

impl MeteredStore {
    pub(crate) fn new(inner: Arc<dyn Store>) -> Self {
        let store = inner.name();
        let durations = STORE_OPERATIONS
            .iter()
            .map(|operation| duration_key(store, operation))
            .collect();
        let system = match store {
            "postgres" => "postgresql",
            "dynamodb" => "aws.dynamodb",
            other => other,
        };
        MeteredStore {
            inner,
            durations,
            system,
        }
    }

    async fn timed<T>(
        &self,
        operation: Operation,
        run: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let (span, timing) = self.start(operation);
        let result = if span.is_disabled() {
            run.await
        } else {
            run.instrument(span).await
        };
        timing.stop();
        result
    }

    /// [`timed`](MeteredStore::timed) for an operation that does not wait: run inside its span.
    fn timed_now<T>(&self, operation: Operation, run: impl FnOnce() -> T) -> T {
        let (span, timing) = self.start(operation);
        let result = span.in_scope(run);
        timing.stop();
        result
    }

    /// The span of `operation`, and its timing, started when a recorder keeps it.
    fn start(&self, operation: Operation) -> (tracing::Span, Timing) {
        let span = tracing::debug_span!(
            target: TARGET,
            "idem.store",
            db.system.name = self.system,
            db.operation.name = STORE_OPERATIONS[operation as usize],
        );
        let histogram = super::histogram(&self.durations[operation as usize]);
        let started = super::listens(&histogram).then(Instant::now);
        (span, Timing { histogram, started })
    }
}

/// An operation's duration, read from the clock only if a recorder kept it as it started.
struct Timing {
    histogram: metrics::Histogram,
    started: Option<Instant>,
}

impl Timing {
    fn stop(self) {
        if let Some(started) = self.started {
            self.histogram.record(super::Elapsed(started));
        }
    }
}

#[async_trait]
impl Store for MeteredStore {
    fn lookup(&self, key: &Key, probe: &Probe) -> Result<Lookup, StoreError> {
        // Untimed, but asked all the same: a store that answers lookups without saying so
        // answers them whether or not something listens.
        if !self.inner.looks_up() {
            return self.inner.lookup(key, probe);
        }
        self.timed_now(Operation::Lookup, || self.inner.lookup(key, probe))
    }

    fn looks_up(&self) -> bool {
        self.inner.looks_up()
    }

    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        self.timed(Operation::Reserve, self.inner.reserve(key, claim))
            .await
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        self.timed(Operation::Complete, self.inner.complete(key, owner, record))
            .await
    }

    async fn release(&self, key: &Key, owner: &OwnerToken) -> Result<(), StoreError> {
        self.timed(Operation::Release, self.inner.release(key, owner))
            .await
    }

    async fn record_step(
        &self,
        key: &Key,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) -> Result<(), StoreError> {
        self.timed(
            Operation::RecordStep,
            self.inner.record_step(key, owner, name, value, kept_until),
        )
        .await
    }

    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Timestamp,
    ) -> Result<(), StoreError> {
        self.timed(Operation::Renew, self.inner.renew(key, owner, lease_until))
            .await
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        self.timed(Operation::Get, self.inner.get(key)).await
    }

    /// Timed as a `get`: a read of the key.
    async fn contains(&self, key: &Key) -> Result<bool, StoreError> {
        self.timed(Operation::Get, self.inner.contains(key)).await
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        self.timed(Operation::Delete, self.inner.delete(key)).await
    }

    async fn delete_if(&self, key: &Key, expected: &Record) -> Result<bool, StoreError> {
        self.timed(Operation::Delete, self.inner.delete_if(key, expected))
            .await
    }

    async fn changed(&self, key: &Key, timeout: Duration) -> Result<(), StoreError> {
        self.inner.changed(key, timeout).await
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn inventory(&self) -> Option<&dyn Inventory> {
        self.inner.inventory()
    }

    fn sealing_scope(&self) -> String {
        self.inner.sealing_scope()
    }
}
