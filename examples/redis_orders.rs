//! An order service whose `create_order` runs at most once per order id, with the records in
//! Redis, so that every instance of the service sees them.
//!
//! ```text
//! redis-server &                                    # or any Redis / Valkey you can reach
//! IDEM_REDIS_URL=redis://127.0.0.1:6379 cargo run -p idem-examples --features redis --example redis_orders
//! ```
//!
//! `IDEM_REDIS_URL` defaults to `redis://127.0.0.1:6379`. Each run uses fresh order ids.

use std::collections::HashMap;
use std::fmt;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use idem_core::{idempotent, Idempotency};
use idem_stores::redis::client::Client;
use idem_stores::redis::RedisStore;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

#[derive(Debug, Serialize)]
struct OrderRequest {
    order_id: String,
    sku: String,
    quantity: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Order {
    number: u64,
    order_id: String,
    sku: String,
    quantity: u32,
}

#[derive(Debug)]
enum OrderError {
    OutOfStock { sku: String },
    Idempotency(idem_core::Error),
}

impl From<idem_core::Error> for OrderError {
    fn from(error: idem_core::Error) -> Self {
        OrderError::Idempotency(error)
    }
}

impl fmt::Display for OrderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OrderError::OutOfStock { sku } => write!(f, "HTTP 409: {sku} is out of stock"),
            OrderError::Idempotency(error) => write!(f, "HTTP {}: {error}", error.http_status()),
        }
    }
}

/// The warehouse: stock per SKU, and every order it has taken.
#[derive(Default)]
struct Warehouse {
    stock: Mutex<HashMap<String, u32>>,
    orders: Mutex<Vec<String>>,
    /// When set, the next order waits here after it has started, to show a duplicate in flight.
    hold: Mutex<Option<(std::sync::Arc<Notify>, std::sync::Arc<Notify>)>>,
}

impl Warehouse {
    async fn take(&self, req: &OrderRequest) -> Result<u64, OrderError> {
        let hold = self.hold.lock().unwrap().take();
        if let Some((started, proceed)) = hold {
            started.notify_one();
            proceed.notified().await;
        }
        let mut stock = self.stock.lock().unwrap();
        let left = stock.entry(req.sku.clone()).or_default();
        if *left < req.quantity {
            return Err(OrderError::OutOfStock {
                sku: req.sku.clone(),
            });
        }
        *left -= req.quantity;
        let mut orders = self.orders.lock().unwrap();
        orders.push(req.order_id.clone());
        Ok(orders.len() as u64)
    }

    fn restock(&self, sku: &str, quantity: u32) {
        *self.stock.lock().unwrap().entry(sku.into()).or_default() += quantity;
    }

    fn orders_taken(&self, order_id: &str) -> usize {
        let orders = self.orders.lock().unwrap();
        orders.iter().filter(|o| *o == order_id).count()
    }
}

struct OrderService {
    idem: Idempotency,
    warehouse: Warehouse,
}

impl OrderService {
    /// Takes the order once per `order_id` for 24 hours; retries get the same order back.
    #[idempotent(
        store = "self.idem",
        key = "req.order_id",
        ttl = "24h",
        name = "orders.create",
        skip = "self"
    )]
    async fn create_order(&self, req: &OrderRequest) -> Result<Order, OrderError> {
        let number = self.warehouse.take(req).await?;
        Ok(Order {
            number,
            order_id: req.order_id.clone(),
            sku: req.sku.clone(),
            quantity: req.quantity,
        })
    }
}

fn request(order_id: &str, sku: &str, quantity: u32) -> OrderRequest {
    OrderRequest {
        order_id: order_id.into(),
        sku: sku.into(),
        quantity,
    }
}

fn show(step: &str, result: &Result<Order, OrderError>) {
    match result {
        Ok(order) => println!(
            "{step}\n    -> order #{} ({} x {})",
            order.number, order.quantity, order.sku
        ),
        Err(error) => println!("{step}\n    -> refused: {error}"),
    }
}

async fn connect(url: &str) -> Result<RedisStore, String> {
    let client = Client::open(url).map_err(|e| format!("`{url}` is not a Redis URL: {e}"))?;
    RedisStore::builder(client)
        .prefix("idem-example:")
        .connect()
        .await
        .map_err(|e| format!("cannot reach Redis at {url}: {e}"))
}

#[tokio::main]
async fn main() -> ExitCode {
    let url = std::env::var("IDEM_REDIS_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
    let store = match connect(&url).await {
        Ok(store) => store,
        Err(message) => {
            eprintln!("{message}");
            eprintln!(
                "Start a server (`redis-server`, or scripts/services.sh installs one) or point \
                 IDEM_REDIS_URL at one, e.g. IDEM_REDIS_URL=redis://127.0.0.1:6379"
            );
            return ExitCode::from(2);
        }
    };
    println!("records in Redis at {url}\n");
    let service = OrderService {
        idem: Idempotency::new(store.clone()).with_namespace("shop"),
        warehouse: Warehouse::default(),
    };
    service.warehouse.restock("blue-widget", 10);
    let run = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    let order = |n: u32| format!("ord-{run}-{n}");

    let first = service
        .create_order(&request(&order(1), "blue-widget", 3))
        .await;
    show(
        &format!(
            "1. create {} (the answer is lost on the way back)",
            order(1)
        ),
        &first,
    );

    let before = store.round_trips();
    let retry = service
        .create_order(&request(&order(1), "blue-widget", 3))
        .await;
    show("2. the client retries with the same order id", &retry);
    println!(
        "    the same order; the warehouse took it {} time; the retry cost {} Redis round trip",
        service.warehouse.orders_taken(&order(1)),
        store.round_trips() - before
    );
    assert_eq!(first.unwrap().number, retry.unwrap().number);

    let started = std::sync::Arc::new(Notify::new());
    let proceed = std::sync::Arc::new(Notify::new());
    *service.warehouse.hold.lock().unwrap() = Some((started.clone(), proceed.clone()));
    let second = request(&order(2), "blue-widget", 1);
    let (in_flight, duplicate) = tokio::join!(service.create_order(&second), async {
        started.notified().await;
        let duplicate = service.create_order(&second).await;
        proceed.notify_one();
        duplicate
    });
    show(
        &format!(
            "3. a duplicate of {} arrives while it is being taken",
            order(2)
        ),
        &duplicate,
    );
    show("   ...the first call finishes", &in_flight);

    let reused = service
        .create_order(&request(&order(1), "blue-widget", 9))
        .await;
    show(
        &format!(
            "4. the order id {} is reused for another quantity",
            order(1)
        ),
        &reused,
    );

    let short = service
        .create_order(&request(&order(3), "red-widget", 2))
        .await;
    show(
        &format!(
            "5. {} for a SKU out of stock (the key is released)",
            order(3)
        ),
        &short,
    );
    service.warehouse.restock("red-widget", 5);
    let restocked = service
        .create_order(&request(&order(3), "red-widget", 2))
        .await;
    show(
        "6. after a restock the same order id goes through",
        &restocked,
    );

    assert!(matches!(
        duplicate,
        Err(OrderError::Idempotency(idem_core::Error::InProgress { .. }))
    ));
    assert!(matches!(
        reused,
        Err(OrderError::Idempotency(idem_core::Error::Mismatch { .. }))
    ));
    assert!(matches!(short, Err(OrderError::OutOfStock { .. })));
    assert!(restocked.is_ok());
    ExitCode::SUCCESS
}
