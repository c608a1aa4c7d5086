//! Orders written in PostgreSQL, with the idempotency record completed in the same
//! transaction as the order row, so that "done" and the order commit, or vanish, together.
//!
//! ```text
//! IDEM_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!     cargo run -p idem-examples --features postgres --example postgres_orders
//! ```
//!
//! The example kills itself twice (it runs a copy of itself that aborts): once between
//! writing the order row and committing, once between committing and the engine's own
//! completion. Each time the retry neither writes the order twice nor reports success without
//! the row. It drops and recreates its own two tables, `example_orders` and
//! `example_idempotency`.

use std::error::Error as StdError;
use std::fmt;
use std::process::{Command, ExitCode};
use std::time::Duration;

use idem_core::{store::Record, Answered, Call, Fingerprint, Idempotency};
use idem_stores::postgres::PostgresStore;
use sqlx::PgPool;

const URL_VAR: &str = "IDEM_POSTGRES_URL";
const LEASE: Duration = Duration::from_secs(2);
const TTL: Duration = Duration::from_secs(24 * 3600);

/// Where a copy of this program kills itself.
#[derive(Clone, Copy, PartialEq)]
enum Crash {
    Never,
    BeforeCommit,
    AfterCommit,
}

/// What placing an order can fail with: idem's refusal, or the database.
#[derive(Debug)]
enum OrderError {
    Idem(idem_core::Error),
    Database(sqlx::Error),
}

impl From<idem_core::Error> for OrderError {
    fn from(error: idem_core::Error) -> Self {
        OrderError::Idem(error)
    }
}

impl From<sqlx::Error> for OrderError {
    fn from(error: sqlx::Error) -> Self {
        OrderError::Database(error)
    }
}

impl fmt::Display for OrderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OrderError::Idem(error) => write!(f, "{error}"),
            OrderError::Database(error) => write!(f, "database: {error}"),
        }
    }
}

impl StdError for OrderError {}

/// Places `order` at most once: the order row and the completed record commit together.
async fn place(
    idem: &Idempotency,
    store: &PostgresStore,
    order: &str,
    crash: Crash,
) -> Result<Answered<String>, OrderError> {
    let key = idem.key("orders.place").part(order).finish()?;
    let call = Call::new(key, Fingerprint::of(&order)?)
        .with_lease(LEASE)
        .with_ttl(TTL);
    idem.run(call, async {
        let attempt = idem_core::context().map_or(1, |context| context.attempt());
        let mut tx = store.pool().begin().await?;
        sqlx::query("INSERT INTO example_orders (id, attempt) VALUES ($1, $2)")
            .bind(order)
            .bind(i64::from(attempt))
            .execute(&mut *tx)
            .await?;
        if crash == Crash::BeforeCommit {
            std::process::abort();
        }
        let receipt = format!("order {order} placed (attempt {attempt})");
        store
            .complete_in_transaction(&mut tx, &receipt, TTL)
            .await?;
        tx.commit().await?;
        if crash == Crash::AfterCommit {
            std::process::abort();
        }
        Ok(receipt)
    })
    .await
}

async fn rows(pool: &PgPool, order: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT count(*) FROM example_orders WHERE id = $1")
        .bind(order)
        .fetch_one(pool)
        .await
}

/// Runs a copy of this program that places `order` and kills itself at `crash`.
fn place_in_a_process_that_dies(order: &str, crash: &str) -> Result<(), Box<dyn StdError>> {
    let status = Command::new(std::env::current_exe()?)
        .args([crash, order])
        .status()?;
    if status.success() {
        return Err(format!("the copy that should die at {crash} exited normally").into());
    }
    println!("  a process placing {order} died at {crash} ({status})");
    Ok(())
}

async fn run() -> Result<(), Box<dyn StdError>> {
    let url = std::env::var(URL_VAR).map_err(|_| format!("set {URL_VAR}"))?;
    let pool = PgPool::connect(&url).await?;
    let store = PostgresStore::builder(pool.clone())
        .table("example_idempotency")
        .build();
    let idem = Idempotency::new(store.clone());

    // A copy of this program, started below, that kills itself.
    let mut args = std::env::args().skip(1);
    if let (Some(crash), Some(order)) = (args.next(), args.next()) {
        let crash = match crash.as_str() {
            "before-commit" => Crash::BeforeCommit,
            "after-commit" => Crash::AfterCommit,
            other => return Err(format!("unknown crash point {other}").into()),
        };
        place(&idem, &store, &order, crash).await?;
        return Err("the process should have died".into());
    }

    for statement in [
        "DROP TABLE IF EXISTS example_orders, example_idempotency",
        "CREATE TABLE example_orders (id text NOT NULL, attempt bigint NOT NULL)",
    ] {
        sqlx::query(statement).execute(&pool).await?;
    }
    store.migrate().await?;

    println!("killed between the order row and the commit:");
    place_in_a_process_that_dies("o-1", "before-commit")?;
    assert_eq!(rows(&pool, "o-1").await?, 0, "the order row rolled back");
    let key = idem.key("orders.place").part("o-1").finish()?;
    assert!(
        matches!(
            idem_core::store::Store::get(&store, &key).await?,
            Some(Record::InProgress(_))
        ),
        "the key stays reserved"
    );
    match place(&idem, &store, "o-1", Crash::Never).await {
        Err(OrderError::Idem(idem_core::Error::InProgress { .. })) => {
            println!("  a retry within the lease is told the order is in progress")
        }
        other => return Err(format!("expected InProgress, got {other:?}").into()),
    }
    tokio::time::sleep(LEASE + Duration::from_millis(100)).await;
    let placed = place(&idem, &store, "o-1", Crash::Never).await?;
    assert!(!placed.replayed);
    println!("  after the lease, a retry places it: {}", placed.value);
    let replay = place(&idem, &store, "o-1", Crash::Never).await?;
    assert!(replay.replayed && replay.value == placed.value);
    println!("  and the next one replays it: {}", replay.value);
    assert_eq!(rows(&pool, "o-1").await?, 1, "one order row");

    println!("killed between the commit and the engine's completion:");
    place_in_a_process_that_dies("o-2", "after-commit")?;
    assert_eq!(rows(&pool, "o-2").await?, 1, "the order row committed");
    let replay = place(&idem, &store, "o-2", Crash::Never).await?;
    assert!(replay.replayed, "the record committed with the row");
    println!("  a retry replays it at once: {}", replay.value);
    assert_eq!(rows(&pool, "o-2").await?, 1, "still one order row");
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("postgres_orders: {error}");
            ExitCode::FAILURE
        }
    }
}
