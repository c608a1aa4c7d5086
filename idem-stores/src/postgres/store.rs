//! `PostgresStore`: the `Store` trait over one statement per operation.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use idem_core::store::{judge_oversized, judge_reserve, ReserveJudgement};
use idem_core::{
    store::{Claim, Completed, OwnerToken, Record, Reservation, Store, Timestamp},
    Key, StoreError,
};
use sqlx::postgres::{PgQueryResult, PgRow};
use sqlx::PgPool;

use super::codec::{self, Decoded};
use super::error::RequestFailed;
use super::sql::{quote_identifier, Statements};
use super::PostgresStoreBuilder;
use super::{names, steps};

/// A [`Store`] in a PostgreSQL table: one row per key, each operation one statement.
///
/// Built on a [`PgPool`] you configure (URL, TLS, pool size, timeouts). See the
/// [module docs](super) for the table, the statements and how to complete a record in your own
/// transaction.
///
/// ```no_run
/// # async fn demo() -> Result<(), idem_core::BoxError> {
/// use idem_stores::postgres::PostgresStore;
/// let pool = sqlx::PgPool::connect("postgres://app@localhost/app").await?;
/// let store = PostgresStore::new(pool);
/// store.migrate().await?; // or run the module docs' SQL in your own migrations
/// idem_core::install(idem_core::Idempotency::new(store));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PostgresStore {
    pool: PgPool,
    table: Arc<str>,
    prefix: Arc<str>,
    pub(crate) statements: Arc<Statements>,
    round_trips: Arc<AtomicU64>,
    /// Why the schema or table name cannot be used, when it cannot: every call is refused.
    refusal: Option<Arc<str>>,
}

impl PostgresStore {
    /// A store in `public.idem_records`, reached through `pool`, with no key prefix.
    pub fn new(pool: PgPool) -> Self {
        Self::builder(pool).build()
    }

    /// Starts building a store on another table or schema, or with a key prefix.
    pub fn builder(pool: PgPool) -> PostgresStoreBuilder {
        PostgresStoreBuilder::new(pool)
    }

    pub(crate) fn from_parts(pool: PgPool, schema: &str, table: &str, prefix: String) -> Self {
        PostgresStore {
            pool,
            table: format!("{}.{}", quote_identifier(schema), quote_identifier(table)).into(),
            prefix: prefix.into(),
            statements: Arc::new(Statements::new(schema, table)),
            round_trips: Arc::new(AtomicU64::new(0)),
            refusal: names::refusal(schema, table).map(Into::into),
        }
    }

    /// Creates the table and its index if they do not exist, and adds the step columns to a
    /// table created before they existed. Teams that own their migrations run the SQL of the
    /// [module docs](super#the-table) instead.
    ///
    /// Safe and cheap at every start-up of every replica:
    /// - when the table, its columns and its index are there, it is one read of the catalog,
    ///   which takes no lock on the table, so it never waits for (or holds up) running calls;
    /// - otherwise it creates what is missing in one transaction under an advisory lock on
    ///   the table's name, so that processes migrating at once take turns instead of failing
    ///   (`CREATE TABLE IF NOT EXISTS` alone is not safe under concurrency in PostgreSQL).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let failed = |error| self.failed("migrate", error);
        if self.catalog(&self.pool).await?.is_complete() {
            return Ok(());
        }
        self.count_round_trip();
        let mut tx = self.pool.begin().await.map_err(failed)?;
        self.count_round_trip();
        sqlx::query(&self.statements.migrate_lock)
            .bind(format!("idem migrate {}", self.table))
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
        // Another process may have migrated while this one waited for the lock; only what
        // is still missing is sent, since `ALTER TABLE` locks out every reader and writer
        // even when it has nothing to add.
        let found = self.catalog(&mut *tx).await?;
        let missing = [
            (!found.table, &self.statements.create_table),
            (
                found.table && found.step_columns < 2,
                &self.statements.add_step_columns,
            ),
            (!found.index, &self.statements.create_index),
        ];
        for (_, statement) in missing.into_iter().filter(|(missing, _)| *missing) {
            self.count_round_trip();
            sqlx::query(statement)
                .execute(&mut *tx)
                .await
                .map_err(failed)?;
        }
        self.count_round_trip();
        tx.commit().await.map_err(failed)
    }

    /// What the catalog holds of the table, read without locking it.
    async fn catalog(&self, executor: impl sqlx::PgExecutor<'_>) -> Result<Catalog, StoreError> {
        self.usable()?;
        self.count_round_trip();
        let row = sqlx::query(&self.statements.catalog)
            .bind(&*self.table)
            .bind(&self.statements.index)
            .fetch_one(executor)
            .await
            .map_err(|error| self.failed("migrate", error))?;
        let read = || -> Result<Catalog, sqlx::Error> {
            Ok(Catalog {
                table: sqlx::Row::try_get(&row, 0)?,
                step_columns: sqlx::Row::try_get(&row, 1)?,
                index: sqlx::Row::try_get(&row, 2)?,
            })
        };
        read().map_err(|error| self.failed("migrate", error))
    }

    /// Deletes at most `batch` rows that stopped counting at `now`: completed records past
    /// their expiry, and in-progress records abandoned a
    /// [`LEASE_GRACE`](idem_core::store::LEASE_GRACE) after their lease and holding no step kept past
    /// `now`, among this store's rows: those whose key starts with its prefix, so that stores
    /// with other prefixes on the same table keep theirs. Returns how many it deleted; call it
    /// again while that is `batch`. A row locked
    /// at that instant (a statement or an uncommitted transaction changing it) is skipped
    /// rather than waited for; a running call holds no lock between its statements and is
    /// kept by its lease. See the [module docs](super#purging) for what that means and for
    /// running it from cron or a task.
    pub async fn purge_expired(&self, now: Timestamp, batch: u32) -> Result<u64, StoreError> {
        let query = sqlx::query(&self.statements.purge)
            .bind(codec::millis(now))
            .bind(abandoned_before(now))
            .bind(i64::from(batch))
            .bind(self.stored_prefix());
        Ok(self.execute("purge", query).await?.rows_affected())
    }

    /// The pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The table, schema-qualified and quoted as the statements spell it.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The prefix in front of every key.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The value of the `key` column for `key`: the prefix and the key, delimited so that no
    /// prefix and key pair can equal another ([`Key::with_prefix`]).
    pub fn row_key(&self, key: &Key) -> String {
        key.with_prefix(&self.prefix)
    }

    /// How many statements this store (and its clones) sent to the server so far: each is one
    /// round trip.
    pub fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// Refuses every statement when the schema or table name cannot be used.
    pub(crate) fn usable(&self) -> Result<(), StoreError> {
        match &self.refusal {
            Some(refusal) => Err(StoreError::rejected(refusal.to_string())),
            None => Ok(()),
        }
    }

    pub(crate) fn count_round_trip(&self) {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn failed(&self, operation: &'static str, error: sqlx::Error) -> StoreError {
        self.failed_request(operation, error).into()
    }

    pub(crate) fn failed_request(
        &self,
        operation: &'static str,
        error: sqlx::Error,
    ) -> RequestFailed {
        RequestFailed::through(&self.pool, operation, &self.table, error)
    }

    async fn execute(
        &self,
        operation: &'static str,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> Result<PgQueryResult, StoreError> {
        self.usable()?;
        self.count_round_trip();
        query
            .execute(&self.pool)
            .await
            .map_err(|error| self.failed(operation, error))
    }

    async fn fetch_optional(
        &self,
        operation: &'static str,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> Result<Option<PgRow>, StoreError> {
        self.usable()?;
        self.count_round_trip();
        query
            .fetch_optional(&self.pool)
            .await
            .map_err(|error| self.failed(operation, error))
    }

    /// A statement conditioned on the owner: no row changed means the key is no longer held
    /// by `owner`.
    async fn owner_checked(
        &self,
        operation: &'static str,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> Result<(), StoreError> {
        match self.execute(operation, query).await?.rows_affected() {
            0 => Err(StoreError::LeaseLost),
            _ => Ok(()),
        }
    }
}

/// What [`PostgresStore::migrate`] finds in the catalog.
struct Catalog {
    table: bool,
    step_columns: i64,
    index: bool,
}

impl Catalog {
    fn is_complete(&self) -> bool {
        self.table && self.step_columns == 2 && self.index
    }
}

/// The lease deadline at or before which an in-progress record is abandoned at `now`.
pub(super) fn abandoned_before(now: Timestamp) -> i64 {
    codec::millis(now).saturating_sub(codec::count(idem_core::store::LEASE_GRACE_MS))
}

/// What the reserve statement's row says, for `claim`.
fn reservation(row: &PgRow, claim: &Claim) -> Result<Reservation, StoreError> {
    let claimed = sqlx::Row::try_get::<bool, _>(row, "claimed")
        .map_err(|error| StoreError::Corrupt(format!("column `claimed`: {error}")))?;
    if let Err(refusal) = codec::check_body_length(row, claim.max_outcome()) {
        // A completed row whose body the statement left out: another call's is a mismatch.
        let (fingerprint, expires_at) = codec::head(row)?;
        return match judge_oversized(&fingerprint, expires_at, refusal, claim)? {
            Some(unread) if !claimed => Ok(Reservation::Existing(unread)),
            _ => Err(StoreError::Corrupt(
                "the reservation left out the body of a row it did not judge live".into(),
            )),
        };
    }
    let Decoded {
        record,
        taken_over_from,
    } = codec::decode(row)?;
    Ok(match (claimed, record) {
        (true, Record::InProgress(record)) => match taken_over_from {
            Some(previous) => Reservation::TookOver { previous, record },
            None => Reservation::Reserved(record),
        },
        // The statement judged the row itself (`row_is_free`) and left it. Of a row left,
        // idem-core's judgement tells the claimant's own reservation, found by a reservation
        // retried after its answer was lost, from a record that stands.
        (false, record) => match judge_reserve(Some(record), claim) {
            ReserveJudgement::Held(own) => Reservation::Reserved(own),
            standing => match standing.into_found() {
                Some(record) => Reservation::Existing(record),
                None => return Err(StoreError::Corrupt("the reservation read no row".into())),
            },
        },
        (true, _) => {
            return Err(StoreError::Corrupt(
                "the reservation wrote a row that is not in progress".into(),
            ))
        }
    })
}

#[async_trait]
impl Store for PostgresStore {
    fn name(&self) -> &'static str {
        "postgres"
    }

    /// The rows in key order, a statement a page, and the purge of those that stopped counting
    /// (see the [module docs](super#listing)).
    fn inventory(&self) -> Option<&dyn idem_core::store::Inventory> {
        Some(self)
    }

    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        let row_key = self.row_key(key);
        let record = claim.record();
        let bound = |statement| {
            sqlx::query(statement)
                .bind(&row_key)
                .bind(record.owner().as_str())
                .bind(record.fingerprint().to_hex())
                .bind(codec::millis(record.lease_until()))
                .bind(codec::count(record.fencing_token()))
                .bind(i64::from(record.attempt()))
                .bind(codec::millis(claim.now()))
                .bind(abandoned_before(claim.now()))
                .bind(claim.max_outcome().map(codec::length))
        };
        if let Some(row) = self
            .fetch_optional("reserve", bound(&self.statements.reserve))
            .await?
        {
            return reservation(&row, claim);
        }
        // No row: another caller inserted the key after the statement's snapshot was taken,
        // so the row was invisible to its read. This statement returns the row in any case.
        match self
            .fetch_optional("reserve", bound(&self.statements.reserve_locking))
            .await?
        {
            Some(row) => reservation(&row, claim),
            None => Err(StoreError::Corrupt(
                "the reservation returned no row for a key it inserted or updated".into(),
            )),
        }
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        let (outcome, body) = codec::outcome_columns(record.outcome())?;
        let query = sqlx::query(&self.statements.complete)
            .bind(self.row_key(key))
            .bind(owner.as_str())
            .bind(record.fingerprint().to_hex())
            .bind(codec::millis(record.expires_at()))
            .bind(outcome)
            .bind(body);
        self.owner_checked("complete", query).await
    }

    async fn release(&self, key: &Key, owner: &OwnerToken) -> Result<(), StoreError> {
        let query = sqlx::query(&self.statements.release)
            .bind(self.row_key(key))
            .bind(owner.as_str());
        // The statement returns a row when it kept or deleted the owner's record.
        match self.fetch_optional("release", query).await? {
            Some(_) => Ok(()),
            None => Err(StoreError::LeaseLost),
        }
    }

    async fn record_step(
        &self,
        key: &Key,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) -> Result<(), StoreError> {
        let query = sqlx::query(&self.statements.record_step)
            .bind(self.row_key(key))
            .bind(owner.as_str())
            .bind(name)
            .bind(steps::value_json(value))
            .bind(codec::millis(kept_until));
        self.owner_checked("record step", query).await
    }

    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Timestamp,
    ) -> Result<(), StoreError> {
        let query = sqlx::query(&self.statements.renew)
            .bind(self.row_key(key))
            .bind(owner.as_str())
            .bind(codec::millis(lease_until));
        self.owner_checked("renew", query).await
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        let query = sqlx::query(&self.statements.get).bind(self.row_key(key));
        let row = self.fetch_optional("get", query).await?;
        row.map(|row| codec::decode(&row).map(|decoded| decoded.record))
            .transpose()
    }

    /// One `DELETE` whose condition is what tells the row read from a later one.
    async fn delete_if(&self, key: &Key, expected: &Record) -> Result<bool, StoreError> {
        let query = match expected {
            Record::InProgress(held) => sqlx::query(&self.statements.delete_held)
                .bind(self.row_key(key))
                .bind(held.owner().as_str())
                .bind(codec::count(held.fencing_token())),
            Record::Completed(completed) => sqlx::query(&self.statements.delete_completed)
                .bind(self.row_key(key))
                .bind(completed.fingerprint().to_hex())
                .bind(codec::millis(completed.expires_at())),
            other => {
                return Err(StoreError::rejected(format!(
                    "the PostgreSQL store cannot tell whether {other:?} is unchanged"
                )))
            }
        };
        Ok(self.execute("delete_if", query).await?.rows_affected() == 1)
    }

    /// `postgres|`, the quoted schema and table, then the key prefix: a row copied to another
    /// table or prefix does not open.
    fn sealing_scope(&self) -> String {
        format!("postgres|{}|{}", self.table, self.prefix)
    }

    /// `SELECT 1`: the key alone, never the row's values.
    async fn contains(&self, key: &Key) -> Result<bool, StoreError> {
        let query = sqlx::query(&self.statements.contains).bind(self.row_key(key));
        Ok(self.fetch_optional("contains", query).await?.is_some())
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        let query = sqlx::query(&self.statements.delete).bind(self.row_key(key));
        self.execute("delete", query).await.map(drop)
    }
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("table", &self.table)
            .field("prefix", &self.prefix)
            .field("round_trips", &self.round_trips())
            .finish_non_exhaustive()
    }
}
