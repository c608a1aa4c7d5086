//! `PostgresStoreBuilder`: the table, schema and key prefix of a store.

use sqlx::PgPool;

use super::PostgresStore;

/// The table [`PostgresStore::new`] uses.
pub const DEFAULT_TABLE: &str = "idem_records";

/// The schema [`PostgresStore::new`] uses.
pub const DEFAULT_SCHEMA: &str = "public";

/// Builds a [`PostgresStore`] on another table or schema, or with a key prefix; start from
/// [`PostgresStore::builder`].
///
/// ```no_run
/// # fn demo(pool: sqlx::PgPool) {
/// use idem_stores::postgres::PostgresStore;
/// let store = PostgresStore::builder(pool)
///     .schema("billing")
///     .table("idempotency")
///     .prefix("charges")
///     .build();
/// # }
/// ```
#[derive(Debug)]
pub struct PostgresStoreBuilder {
    pool: PgPool,
    schema: String,
    table: String,
    prefix: String,
}

impl PostgresStoreBuilder {
    pub(crate) fn new(pool: PgPool) -> Self {
        PostgresStoreBuilder {
            pool,
            schema: DEFAULT_SCHEMA.to_owned(),
            table: DEFAULT_TABLE.to_owned(),
            prefix: String::new(),
        }
    }

    /// Keeps the records in `table` (default [`DEFAULT_TABLE`]). Any name of 1 to 63 bytes
    /// ([`MAX_NAME_BYTES`](super::MAX_NAME_BYTES)) works: it is quoted in every statement. A
    /// longer one is refused, since PostgreSQL would cut it and two names could then share one
    /// table: every call (and [`migrate`](PostgresStore::migrate)) fails with
    /// [`StoreError::Rejected`](idem_core::StoreError::Rejected), which says so.
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }

    /// Looks the table up in `schema` (default [`DEFAULT_SCHEMA`]), which must exist. Its name
    /// is held to the same 63 bytes as the table's.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Puts `prefix` in front of every key (default: none), so that several services can share
    /// one table.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The store.
    pub fn build(self) -> PostgresStore {
        PostgresStore::from_parts(self.pool, &self.schema, &self.table, self.prefix)
    }
}
