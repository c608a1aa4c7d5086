//! Exactly once across two services. An upstream order service (the `downstream_upstream`
//! worker on a real Redis: axum behind the HTTP layer for even orders, an `#[idempotent]`
//! function for odd ones) charges each order, in a step, at a
//! downstream payment service (axum behind its own layer, on a memory store, in this process)
//! through idem-client. Worker processes are killed (`SIGKILL`) and stopped past their lease
//! (`SIGSTOP`, then `SIGCONT`) at random, and idem-certify's proxy drops the downstream's
//! answers at random; a driver places orders against whichever workers live, retrying each
//! with its key until it is answered. The downstream counts its charges.
//!
//! - With the client's downstream keys, every order is charged exactly once, under one key:
//!   a takeover re-sends the charge under the key the dead worker used, and the downstream's
//!   own idempotency answers it from its record.
//! - With random keys inside calls (`downstream_keys(false)`, the client as it was before), the
//!   same run charges orders twice: the check is known to fail when keys are not derived.
//!
//! Each run lasts `IDEM_DOWNSTREAM_SECONDS` (15 s by default, the CI run); the long run is
//!
//! ```console
//! IDEM_DOWNSTREAM_SECONDS=90 cargo test --workspace --all-features --test it_backend -- system_downstream --nocapture
//! ```
//!
//! which kills and stops workers some hundred times (the summary line says how many). The run
//! with random keys lasts at most 15 s: it only has to show one double charge.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use idem_certify::listening::Listening;
use idem_certify::proxies::{NetFault, Proxy};
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use idem_test_servers::redis::target::RedisTarget;

/// The upstream's lease: short, so that takeovers come quickly. The worker's attribute says
/// `lease = "1s"` too.
const LEASE: Duration = Duration::from_millis(1000);
/// Upstream worker processes serving at once.
const WORKERS: usize = 3;
/// Orders placed at once.
const DRIVERS: usize = 6;
/// How long one order may take, retries included, before the run fails.
const ORDER_DEADLINE: Duration = Duration::from_secs(60);

/// How long each run lasts: `IDEM_DOWNSTREAM_SECONDS`, or 15 s.
fn run_length() -> Duration {
    let seconds = std::env::var("IDEM_DOWNSTREAM_SECONDS")
        .ok()
        .map(|text| {
            text.parse()
                .unwrap_or_else(|_| panic!("IDEM_DOWNSTREAM_SECONDS={text} is not a number"))
        })
        .unwrap_or(15);
    Duration::from_secs(seconds)
}

/// The payment service: every charge its handler makes, as (order, key).
#[derive(Default)]
struct Payments {
    charges: Mutex<Vec<(String, String)>>,
    in_flight: AtomicUsize,
}

async fn charge(
    State(payments): State<Arc<Payments>>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, String) {
    payments.in_flight.fetch_add(1, Ordering::SeqCst);
    let key = headers
        .get("idempotency-key")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let order: serde_json::Value = serde_json::from_str(&body).expect("a JSON order");
    let order = order["order"].as_str().expect("an order id").to_owned();
    let number = {
        let mut charges = payments.charges.lock().unwrap();
        charges.push((order.clone(), key));
        charges.len()
    };
    // The charge takes a while, so that kills and stopped workers land while it runs.
    tokio::time::sleep(Duration::from_millis(fastrand::u64(50..250))).await;
    payments.in_flight.fetch_sub(1, Ordering::SeqCst);
    let answer = format!(r#"{{"charge":"ch_{number}","order":"{order}"}}"#);
    (StatusCode::CREATED, answer)
}

/// Serves the payment service behind its own layer; returns its `host:port`.
async fn payment_service(payments: Arc<Payments>) -> String {
    let app = Router::new()
        .route("/charges", post(charge))
        .with_state(payments)
        .layer(IdempotencyLayer::new(Idempotency::new(MemoryStore::new())));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

/// One upstream worker process, which says where it listens as idem-certify's servers do.
struct Worker {
    server: Listening,
    url: String,
    /// When a stopped worker is resumed.
    resume_at: Option<Instant>,
}

impl Worker {
    /// Starts a worker and waits until it serves.
    async fn start(args: Arc<Vec<String>>) -> Worker {
        tokio::task::spawn_blocking(move || {
            let mut command = Command::new(env!("CARGO_BIN_EXE_downstream_upstream"));
            command.args(args.iter()).stderr(Stdio::inherit());
            let server = Listening::spawn(command)
                .unwrap_or_else(|error| panic!("the upstream worker: {error}"));
            Worker {
                url: format!("http://{}", server.address),
                server,
                resume_at: None,
            }
        })
        .await
        .unwrap()
    }

    /// SIGKILL, and waits for it to die.
    fn kill(mut self) {
        self.server.kill();
    }
}

/// What the nemesis did.
#[derive(Debug, Default)]
struct Faults {
    kills: usize,
    stops: usize,
    dropped_answers: usize,
}

/// The workers serving now; the drivers pick one at random for each attempt.
type Pool = Arc<Mutex<Vec<Worker>>>;

fn pick(pool: &Pool) -> String {
    let workers = pool.lock().unwrap();
    workers[fastrand::usize(..workers.len())].url.clone()
}

/// Kills, stops and resumes workers and drops the payment service's answers, until `done`.
async fn nemesis(
    pool: Pool,
    args: Arc<Vec<String>>,
    mut proxy: Proxy,
    done: Arc<AtomicBool>,
) -> Faults {
    let mut faults = Faults::default();
    let mut rng = fastrand::Rng::new();
    let mut actions = 0usize;
    while !done.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(rng.u64(300..900))).await;
        let now = Instant::now();
        for worker in pool.lock().unwrap().iter_mut() {
            if worker.resume_at.is_some_and(|at| at <= now) {
                worker.server.resume().expect("SIGCONT");
                worker.resume_at = None;
            }
        }
        // Kill, stop, kill, drop answers, over and over: every fault in every run, at random
        // moments and on random workers.
        actions += 1;
        match actions % 4 {
            1 | 3 => {
                let victim = {
                    let mut workers = pool.lock().unwrap();
                    let at = rng.usize(..workers.len());
                    workers.swap_remove(at)
                };
                victim.kill();
                faults.kills += 1;
                let replacement = Worker::start(args.clone()).await;
                pool.lock().unwrap().push(replacement);
            }
            2 => {
                let mut workers = pool.lock().unwrap();
                let running: Vec<usize> = (0..workers.len())
                    .filter(|&at| workers[at].resume_at.is_none())
                    .collect();
                if let Some(&at) = running.get(rng.usize(..running.len().max(1))) {
                    workers[at].server.stop().expect("SIGSTOP");
                    // Past the lease: a retry takes the order over meanwhile.
                    let paused = LEASE.mul_f64(1.5 + rng.f64() * 1.5);
                    workers[at].resume_at = Some(now + paused);
                    faults.stops += 1;
                }
            }
            _ => {
                proxy
                    .inject(NetFault::DropAnswers, LEASE.as_millis() as u64, &mut rng)
                    .await;
                tokio::time::sleep(Duration::from_millis(rng.u64(100..500))).await;
                proxy.heal(NetFault::DropAnswers).await.unwrap();
                faults.dropped_answers += 1;
            }
        }
    }
    for worker in pool.lock().unwrap().iter_mut() {
        if worker.resume_at.take().is_some() {
            worker.server.resume().expect("SIGCONT");
        }
    }
    faults
}

/// Places order `order` until a worker answers it with a success, or the deadline passes.
async fn place(http: &reqwest::Client, pool: &Pool, order: usize) -> Result<(), String> {
    let started = Instant::now();
    let mut last = String::new();
    while started.elapsed() < ORDER_DEADLINE {
        // Even orders go through the layer, odd ones through the attribute.
        let route = if order.is_multiple_of(2) {
            "orders"
        } else {
            "checkouts"
        };
        let url = format!("{}/{route}/o-{order}", pick(pool));
        match http
            .post(url)
            .bearer_auth("shop-client")
            .header("idempotency-key", format!("order-{order}"))
            .send()
            .await
        {
            Ok(response) if response.status().is_success() => return Ok(()),
            Ok(response) => last = response.status().to_string(),
            Err(error) => last = format!("{error:?}"),
        }
        tokio::time::sleep(Duration::from_millis(fastrand::u64(30..120))).await;
    }
    Err(format!("order o-{order} not placed in time; last: {last}"))
}

/// What a run saw: the charges per order, the orders placed, the faults.
struct Run {
    charges: HashMap<String, Vec<String>>,
    placed: usize,
    faults: Faults,
}

/// Runs the two services for `length` under faults, with `keys` (`derived` or `random`).
async fn run(keys: &str, length: Duration) -> Option<Run> {
    let target = RedisTarget::start().await?;
    let payments = Arc::new(Payments::default());
    let service = payment_service(payments.clone()).await;
    let proxy = Proxy::start("payments", &service).await.unwrap();
    let args = Arc::new(vec![
        target.url().to_owned(),
        target.prefix().to_owned(),
        format!("http://{}", proxy.listen),
        keys.to_owned(),
        LEASE.as_millis().to_string(),
    ]);
    let pool: Pool = Arc::default();
    for _ in 0..WORKERS {
        let worker = Worker::start(args.clone()).await;
        pool.lock().unwrap().push(worker);
    }
    let done = Arc::new(AtomicBool::new(false));
    let nemesis = tokio::spawn(nemesis(pool.clone(), args.clone(), proxy, done.clone()));
    let http = reqwest::Client::builder()
        .timeout(LEASE * 2)
        .build()
        .unwrap();
    let next_order = Arc::new(AtomicUsize::new(0));
    let until = Instant::now() + length;
    let drivers: Vec<_> = (0..DRIVERS)
        .map(|_| {
            let (http, pool, next_order) = (http.clone(), pool.clone(), next_order.clone());
            tokio::spawn(async move {
                let mut failures = Vec::new();
                while Instant::now() < until {
                    let order = next_order.fetch_add(1, Ordering::SeqCst);
                    if let Err(failure) = place(&http, &pool, order).await {
                        failures.push(failure);
                    }
                }
                failures
            })
        })
        .collect();
    let mut failures = Vec::new();
    for driver in drivers {
        failures.extend(driver.await.unwrap());
    }
    done.store(true, Ordering::SeqCst);
    let faults = nemesis.await.unwrap();
    // No worker is left to send a charge; wait for the charges already under way to end.
    for worker in std::mem::take(&mut *pool.lock().unwrap()) {
        worker.kill();
    }
    let quiet = Instant::now();
    while payments.in_flight.load(Ordering::SeqCst) > 0 {
        assert!(
            quiet.elapsed() < Duration::from_secs(10),
            "a charge never ends"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(failures.is_empty(), "orders not placed: {failures:#?}");
    let mut charges: HashMap<String, Vec<String>> = HashMap::new();
    for (order, key) in payments.charges.lock().unwrap().drain(..) {
        charges.entry(order).or_default().push(key);
    }
    let placed = next_order.load(Ordering::SeqCst);
    let doubles = charges.values().filter(|keys| keys.len() > 1).count();
    println!(
        "{keys} keys: {placed} orders, {} charges, {doubles} charged more than once; \
         {} kills, {} stops past the lease, {} windows of dropped answers",
        charges.values().map(Vec::len).sum::<usize>(),
        faults.kills,
        faults.stops,
        faults.dropped_answers
    );
    Some(Run {
        charges,
        placed,
        faults,
    })
}

async fn with_downstream_keys_every_order_is_charged_once_under_one_key() {
    let Some(run) = run("derived", run_length()).await else {
        return;
    };
    assert!(
        run.faults.kills >= 3 && run.faults.stops >= 1,
        "too few faults to tell: {:?}",
        run.faults
    );
    let twice: Vec<_> = run
        .charges
        .iter()
        .filter(|(_, keys)| keys.len() != 1)
        .collect();
    assert!(twice.is_empty(), "charged more than once: {twice:#?}");
    for order in 0..run.placed {
        assert!(
            run.charges.contains_key(&format!("o-{order}")),
            "o-{order} was answered but never charged"
        );
    }
    assert_eq!(
        run.charges.len(),
        run.placed,
        "a charge for no order placed"
    );
}

async fn with_random_keys_a_takeover_charges_twice() {
    let length = run_length().min(Duration::from_secs(15));
    let Some(run) = run("random", length).await else {
        return;
    };
    let twice = run.charges.values().filter(|keys| keys.len() > 1).count();
    assert!(
        twice > 0,
        "no order charged twice with random keys over {} kills: the run cannot tell",
        run.faults.kills
    );
}

idem_tests::module_tests! {
    async with_downstream_keys_every_order_is_charged_once_under_one_key = long,
    async with_random_keys_a_takeover_charges_twice = long,
}
