//! A checkout that charges a card, then books the charge in a ledger, and crashes between the
//! two. The retry resumes after the charge instead of charging again, because each side effect
//! is an `idem_core::step` whose result is recorded under the call's key.
//!
//! ```text
//! cargo run -p idem-examples --example checkout_steps                    # memory store
//! IDEM_REDIS_URL=redis://127.0.0.1:6379 \
//!     cargo run -p idem-examples --features redis --example checkout_steps # Redis
//! ```
//!
//! The crash is simulated in this process: the first attempt is dropped mid-call, which leaves
//! its reservation held until the lease passes, exactly as a killed process would. (The tests
//! kill a real child process with SIGKILL on Redis, DynamoDB and PostgreSQL.)

use std::fmt;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use idem_core::{idempotent, step, store::Store, Idempotency};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

#[derive(Serialize)]
struct Order {
    order_id: String,
    amount: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct Receipt {
    charge: String,
    ledger_entry: u32,
}

#[derive(Debug)]
enum ShopError {
    Idempotency(idem_core::Error),
}

impl From<idem_core::Error> for ShopError {
    fn from(error: idem_core::Error) -> Self {
        ShopError::Idempotency(error)
    }
}

impl fmt::Display for ShopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShopError::Idempotency(error) => write!(f, "HTTP {}: {error}", error.http_status()),
        }
    }
}

/// The card gateway and the ledger, counting what they did, and a switch that makes the next
/// checkout crash right after its charge.
#[derive(Default)]
struct Shop {
    charges: AtomicU32,
    entries: AtomicU32,
    crash_after_charge: AtomicBool,
    charged: Notify,
}

impl Shop {
    async fn charge(&self, order: &Order) -> Result<String, ShopError> {
        let n = self.charges.fetch_add(1, Ordering::SeqCst) + 1;
        println!(
            "    gateway: charged {} cents for {} (charge #{n})",
            order.amount, order.order_id
        );
        Ok(format!("ch_{n}"))
    }

    async fn book(&self, charge: &str) -> Result<u32, ShopError> {
        let n = self.entries.fetch_add(1, Ordering::SeqCst) + 1;
        println!("    ledger: booked {charge} (entry #{n})");
        Ok(n)
    }

    /// Checks `order` out at most once; a retry after a crash resumes after the last finished
    /// step. The lease is short so that the retry below does not wait long for the dead call.
    #[idempotent(
        key = "order.order_id",
        lease = "1s",
        wait = "10s",
        name = "shop.checkout",
        skip = "self"
    )]
    async fn checkout(&self, order: &Order) -> Result<Receipt, ShopError> {
        let attempt = idem_core::context().map_or(1, |c| c.attempt());
        println!("    checkout {} runs (attempt {attempt})", order.order_id);
        let charge = step("charge", self.charge(order)).await?;
        if self.crash_after_charge.swap(false, Ordering::SeqCst) {
            println!("    -- the process dies here, before the ledger --");
            self.charged.notify_one();
            std::future::pending::<()>().await;
        }
        let ledger_entry = step("ledger", self.book(&charge)).await?;
        Ok(Receipt {
            charge,
            ledger_entry,
        })
    }
}

/// The store: Redis when built with `--features redis` and `IDEM_REDIS_URL` is set, the
/// embedded memory store otherwise.
async fn store() -> Result<(Arc<dyn Store>, String), String> {
    #[cfg(feature = "redis")]
    if let Ok(url) = std::env::var("IDEM_REDIS_URL") {
        let client = idem_stores::redis::client::Client::open(url.as_str())
            .map_err(|e| format!("`{url}` is not a Redis URL: {e}"))?;
        let store = idem_stores::redis::RedisStore::builder(client)
            .prefix("idem-example:")
            .connect()
            .await
            .map_err(|e| format!("cannot reach Redis at {url}: {e}"))?;
        return Ok((Arc::new(store), format!("Redis at {url}")));
    }
    let store = idem_stores::memory::MemoryStore::new();
    Ok((Arc::new(store), "the memory store".to_owned()))
}

#[tokio::main]
async fn main() -> ExitCode {
    let (store, name) = match store().await {
        Ok(found) => found,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    println!("records in {name}\n");
    idem_core::install(Idempotency::from_arc(store).with_namespace("shop"));
    let shop = Arc::new(Shop::default());
    let run = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    let order = move || Order {
        order_id: format!("ord-{run}"),
        amount: 4_200,
    };

    println!("1. the first attempt charges the card, then its process crashes");
    shop.crash_after_charge.store(true, Ordering::SeqCst);
    let first = {
        let shop = shop.clone();
        tokio::spawn(async move { shop.checkout(&order()).await })
    };
    shop.charged.notified().await;
    first.abort();
    let _ = first.await;

    println!("\n2. the client retries: it waits for the dead call's lease, takes over and resumes");
    let receipt = match shop.checkout(&order()).await {
        Ok(receipt) => receipt,
        Err(error) => {
            eprintln!("the retry failed: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("    -> {receipt:?}");

    println!("\n3. another retry gets the stored receipt; nothing runs");
    let replayed = shop
        .checkout(&order())
        .await
        .expect("the receipt is stored");
    println!("    -> {replayed:?}");

    let (charges, entries) = (
        shop.charges.load(Ordering::SeqCst),
        shop.entries.load(Ordering::SeqCst),
    );
    println!("\nthe card was charged {charges} time, the ledger booked {entries} time");
    assert_eq!((charges, entries), (1, 1), "each side effect ran once");
    assert_eq!(receipt.charge, replayed.charge);
    ExitCode::SUCCESS
}
