//! DynamoDB requests and latency per kind of call, on a moto_server started here on a loopback
//! port (or `IDEM_DYNAMODB_ENDPOINT`), next to a raw consistent `GetItem` of the record through
//! the same client, interleaved in one run.
//!
//! ```text
//! cargo bench -p idem-tests --features dynamodb --bench dynamodb_calls
//! ```
//!
//! `IDEM_BENCH_CALLS` sets how many calls of each kind are timed (default 300, after a tenth
//! more to warm up). moto is a Python server, far slower than DynamoDB itself: its latencies
//! say how many requests a call makes and how heavy they are, not what DynamoDB would take.
//! The request counts are exact.

use std::time::{Duration, Instant};

use idem_core::{step, Call, Error, Fingerprint, Idempotency};
use idem_test_servers::dynamodb::TestDynamo;

fn call(idem: &Idempotency, order: &str) -> Call {
    let key = idem.key("orders.create").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&(order, 3, "blue")).unwrap())
}

/// Latencies of one kind of call, and the requests they made.
#[derive(Default)]
struct Kind {
    times: Vec<Duration>,
    requests: usize,
}

impl Kind {
    fn p(&self, p: f64) -> Duration {
        let mut sorted = self.times.clone();
        sorted.sort();
        sorted[((sorted.len() - 1) as f64 * p).round() as usize]
    }
}

/// Times `op` and counts the requests it made, once warmed up.
async fn measure<F: std::future::Future<Output = ()>>(
    dynamo: &TestDynamo,
    kind: &mut Kind,
    warm: bool,
    op: F,
) {
    let before = dynamo.requests.count();
    let started = Instant::now();
    op.await;
    if warm {
        kind.times.push(started.elapsed());
        kind.requests += dynamo.requests.count() - before;
    }
}

async fn run(dynamo: TestDynamo, calls: usize) {
    let idem = Idempotency::from_arc(dynamo.store.clone());
    let replayed = call(&idem, "order-replayed");
    idem.run(replayed.clone(), async {
        Ok::<_, Error>("order 42".to_owned())
    })
    .await
    .unwrap();
    let names = [
        "raw consistent `GetItem` of the record",
        "idem replay",
        "idem fresh call (reserve, run, complete)",
        "idem fresh call with two steps",
    ];
    let mut kinds: Vec<Kind> = names.iter().map(|_| Kind::default()).collect();
    let warm_up = calls / 10;
    for n in 0..warm_up + calls {
        let warm = n >= warm_up;
        measure(&dynamo, &mut kinds[0], warm, async {
            assert!(dynamo.get_raw(replayed.key()).await.is_some());
        })
        .await;
        measure(&dynamo, &mut kinds[1], warm, async {
            let done = idem
                .run(replayed.clone(), async {
                    Ok::<_, Error>("again".to_owned())
                })
                .await
                .unwrap();
            assert!(done.replayed);
        })
        .await;
        measure(&dynamo, &mut kinds[2], warm, async {
            let fresh = call(&idem, &format!("fresh-{n}"));
            idem.run(fresh, async { Ok::<_, Error>("order".to_owned()) })
                .await
                .unwrap();
        })
        .await;
        measure(&dynamo, &mut kinds[3], warm, async {
            let fresh = call(&idem, &format!("steps-{n}"));
            idem.run(fresh, async {
                let charge = step("charge", async { Ok::<_, Error>("ch_1".to_owned()) }).await?;
                let entry = step("ledger", async { Ok::<_, Error>(7u64) }).await?;
                Ok::<_, Error>((charge, entry))
            })
            .await
            .unwrap();
        })
        .await;
    }
    let raw = kinds[0].p(0.5).as_secs_f64();
    println!(
        "server: moto_server at {} (loopback)",
        dynamo.moto.endpoint()
    );
    println!();
    println!("#### DynamoDB, one caller, {calls} calls of each kind interleaved");
    println!();
    println!("| what | requests per call | p50 | p99 | p50 × raw `GetItem` |");
    println!("|---|---|---|---|---|");
    for (name, kind) in names.iter().zip(&kinds) {
        println!(
            "| {name} | {:.2} | {:.1?} | {:.1?} | {:.2}× |",
            kind.requests as f64 / calls as f64,
            kind.p(0.5),
            kind.p(0.99),
            kind.p(0.5).as_secs_f64() / raw
        );
    }
}

fn main() {
    let calls = std::env::var("IDEM_BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let Some(dynamo) = TestDynamo::start().await else {
            println!(
                "(no DynamoDB endpoint: moto_server is not installed; see scripts/services.sh)"
            );
            return;
        };
        run(dynamo, calls).await;
    });
}
