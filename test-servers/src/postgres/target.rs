//! A PostgreSQL store on a fresh database, for behaviour and conformance tests.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idem_conformance::Target;
use idem_core::{store::Store, Key};
use idem_stores::postgres::PostgresStore;
use sqlx::postgres::PgPoolOptions;
use sqlx::{Connection, PgConnection, PgPool};

use crate::postgres::server::TestPostgres;
use crate::unique::unique_name;

/// A PostgreSQL store on a database of its own, its table migrated. Owns its server when it
/// started one: dropping it stops the server.
#[derive(Debug)]
pub struct TestPg {
    /// The store, on the default table.
    pub store: Arc<PostgresStore>,
    /// The pool the store uses.
    pub pool: PgPool,
    /// The database's URL.
    pub url: String,
    /// The server (last, so that it stops after the pool is dropped).
    pub server: TestPostgres,
}

impl TestPg {
    /// A store on a fresh database of the test server (see [`TestPostgres::start`]). `None`
    /// when no server can be had (the test is then ignored).
    pub async fn start() -> Option<TestPg> {
        Some(Self::on(TestPostgres::start()?).await)
    }

    /// Like [`start`](TestPg::start), on a cluster this test owns and may kill.
    pub async fn start_owned() -> Option<TestPg> {
        Some(Self::on(TestPostgres::start_owned()?).await)
    }

    /// A store on a fresh database of `server`, through a pool of 16 connections.
    pub async fn on(server: TestPostgres) -> TestPg {
        Self::on_with(server, Self::pool_options()).await
    }

    /// A store on a fresh database of `server`, through a pool built with `options`.
    pub async fn on_with(server: TestPostgres, options: PgPoolOptions) -> TestPg {
        let database = unique_database_name();
        let mut admin = PgConnection::connect(&format!("{}/postgres", server.server_url()))
            .await
            .unwrap_or_else(|error| panic!("connecting to {}: {error}", server.server_url()));
        sqlx::query(&format!("CREATE DATABASE \"{database}\""))
            .execute(&mut admin)
            .await
            .unwrap_or_else(|error| panic!("creating database {database}: {error}"));
        let _ = admin.close().await;
        let url = format!("{}/{database}", server.server_url());
        let pool = options.connect(&url).await.expect("a pool");
        let store = PostgresStore::new(pool.clone());
        store.migrate().await.expect("the table is created");
        TestPg {
            store: Arc::new(store),
            pool,
            url,
            server,
        }
    }

    /// The options of the tests' pools: 16 connections, 5 s to get one.
    pub fn pool_options() -> PgPoolOptions {
        PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(5))
    }

    /// Whether `condition`, a boolean query on the database, holds now.
    pub async fn holds(&self, condition: &str) -> bool {
        sqlx::query_scalar::<_, bool>(condition)
            .fetch_one(&self.pool)
            .await
            .unwrap_or_else(|error| panic!("{condition}: {error}"))
    }

    /// Waits until `condition` (see [`holds`](TestPg::holds)) holds, polling it: for states of
    /// the server (a statement waiting for a lock) that send no signal of their own.
    pub async fn wait_until(&self, what: &str, condition: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !self.holds(condition).await {
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out after 10s waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Runs `sql` on the database, bypassing the store.
    pub async fn execute_raw(&self, sql: &str) {
        sqlx::query(sql)
            .execute(&self.pool)
            .await
            .unwrap_or_else(|error| panic!("{sql}: {error}"));
    }
}

#[async_trait]
impl Target for TestPg {
    fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// A row whose state is neither `in_progress` nor `completed`.
    async fn corrupt(&self, key: &Key) -> bool {
        sqlx::query(
            "INSERT INTO idem_records (key, state, owner, fingerprint, live_until_ms) \
             VALUES ($1, 'garbage', 'someone', 'not hex', 0) \
             ON CONFLICT (key) DO UPDATE SET state = 'garbage', fingerprint = 'not hex'",
        )
        .bind(self.store.row_key(key))
        .execute(&self.pool)
        .await
        .expect("a raw write succeeds");
        true
    }
}

/// A database name no other test uses, even on a shared server.
pub fn unique_database_name() -> String {
    unique_name('_')
}
