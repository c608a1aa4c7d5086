//! The memory store's costs as markdown tables of ratios, every figure measured side by side
//! in the same run.
//!
//! ```text
//! cargo bench -p idem-stores --bench memory_report
//! ```
//!
//! - One caller at a time: a plain call, a fresh idempotent call, a replay (with and without a
//!   [`ReplayCache`]; with metrics-exporter-prometheus's recorder installed, as a service
//!   exporting to Prometheus runs; and with metrics-util's debugging recorder and a `tracing`
//!   subscriber installed) and the replay's floor (build the key, fingerprint the request,
//!   decode the stored result), each timed in `ROUNDS` interleaved rounds (the rows with a
//!   subscriber in rounds of their own, last); medians per call; and the goals they meet.
//! - idem's canonical fingerprint next to `serde_json::to_vec` + SHA-256 of the same value.
//! - Replays and fresh calls per second with 1, 8, 64 and 512 concurrent callers on distinct
//!   keys and on one hot key, on a runtime with as many worker threads as cores.
//! - A full store's refusal of a new key, with 1 000 and 200 000 live records held: the cost
//!   must not grow with the store.
//!
//! How a replay grows with the live keys the store holds is the `memory_scaling` bench's.
//!
//! `IDEM_BENCH_MILLIS` sets the length of each concurrent phase (default 1 000).

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idem_core::{Fingerprint, Idempotency, ReplayCache};
use idem_stores::memory::MemoryStore;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusRecorder};
use sha2::{Digest, Sha256};

mod charge;
mod figures;
mod replay_floor;
use charge::{charge, idempotent_charge, request, ChargeRequest};
use figures::{median, verdict};
use replay_floor::{replay_floor, stored_result};

const ROUNDS: usize = 7;
const CALLS_PER_ROUND: u32 = 20_000;
const CALLERS: [usize; 4] = [1, 8, 64, 512];
/// How many live records a full store holds in the refusal rows.
const FULL_SIZES: [usize; 2] = [1_000, 200_000];
/// Refused calls per round: few, since a store that scans on refusal takes milliseconds each.
const REFUSALS_PER_ROUND: u64 = 500;

/// How long a charge's outcome is kept.
const TTL: Duration = Duration::from_secs(60);

fn serde_sha256(req: &ChargeRequest) -> [u8; 32] {
    Sha256::digest(serde_json::to_vec(req).unwrap()).into()
}

/// Nanoseconds per call of `op`, `CALLS_PER_ROUND` calls.
async fn time_per_call<F, Fut>(mut op: F) -> f64
where
    F: FnMut(u64) -> Fut,
    Fut: Future<Output = ()>,
{
    let started = Instant::now();
    for n in 0..CALLS_PER_ROUND {
        op(n.into()).await;
    }
    started.elapsed().as_nanos() as f64 / f64::from(CALLS_PER_ROUND)
}

/// `timed` run with a `metrics` recorder and a `tracing` subscriber installed on this thread:
/// metrics-util's debugging recorder, which keeps every value, and tracing-subscriber's
/// registry, which keeps every span (the store's DEBUG ones included).
async fn listened(timed: impl Future<Output = f64>) -> f64 {
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    let _recorder = metrics::set_default_local_recorder(&recorder);
    let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry());
    timed.await
}

/// `timed` run with `recorder`, metrics-exporter-prometheus's, installed on this thread and no
/// subscriber; then the upkeep its exporter would run every few seconds (draining the
/// histograms' samples), outside the timing.
async fn prometheus(recorder: &PrometheusRecorder, timed: impl Future<Output = f64>) -> f64 {
    let figure = {
        let _recorder = metrics::set_default_local_recorder(recorder);
        timed.await
    };
    recorder.handle().run_upkeep();
    figure
}

/// One caller at a time: `(name, median ns per call)` in order, measured in interleaved rounds.
fn sequential() -> Vec<(&'static str, f64)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let idem = Idempotency::new(MemoryStore::new());
        let cached = Idempotency::new(MemoryStore::new())
            .with_replay_cache(ReplayCache::new(10_000, 16 << 20));
        let replayed = request(0);
        idempotent_charge(&idem, &replayed, TTL).await.unwrap();
        idempotent_charge(&cached, &replayed, TTL).await.unwrap();
        let stored = stored_result(&replayed).await;
        // One recorder for the whole run, as a service installs one for its life.
        let recorder = PrometheusBuilder::new().build_recorder();
        let next_order = AtomicU64::new(1);
        let fresh_requests = || request(next_order.fetch_add(1, Ordering::Relaxed));
        let names = [
            "plain call",
            "fresh idempotent call",
            "replay",
            "replay, replay cache on",
            "replay, Prometheus recorder",
            "replay, replay cache on, Prometheus recorder",
            "replay, recorder and subscriber installed",
            "replay, replay cache on, recorder and subscriber installed",
            "replay floor",
            "idem fingerprint",
            "serde_json::to_vec + SHA-256",
        ];
        let mut samples = vec![Vec::new(); names.len()];
        for _ in 0..ROUNDS {
            let figures = [
                time_per_call(|_| async {
                    let req = fresh_requests();
                    std::hint::black_box(charge(&req).await.unwrap());
                })
                .await,
                time_per_call(|_| async {
                    let req = fresh_requests();
                    std::hint::black_box(idempotent_charge(&idem, &req, TTL).await.unwrap());
                })
                .await,
                time_per_call(|_| async {
                    std::hint::black_box(idempotent_charge(&idem, &replayed, TTL).await.unwrap());
                })
                .await,
                time_per_call(|_| async {
                    std::hint::black_box(idempotent_charge(&cached, &replayed, TTL).await.unwrap());
                })
                .await,
                prometheus(
                    &recorder,
                    time_per_call(|_| async {
                        std::hint::black_box(
                            idempotent_charge(&idem, &replayed, TTL).await.unwrap(),
                        );
                    }),
                )
                .await,
                prometheus(
                    &recorder,
                    time_per_call(|_| async {
                        std::hint::black_box(
                            idempotent_charge(&cached, &replayed, TTL).await.unwrap(),
                        );
                    }),
                )
                .await,
                // Measured after every other row: see below.
                f64::NAN,
                f64::NAN,
                time_per_call(|_| async {
                    std::hint::black_box(replay_floor(&idem, &replayed, &stored));
                })
                .await,
                time_per_call(|_| async {
                    std::hint::black_box(Fingerprint::of(&replayed).unwrap());
                })
                .await,
                time_per_call(|_| async {
                    std::hint::black_box(serde_sha256(&replayed));
                })
                .await,
            ];
            for (sample, figure) in samples.iter_mut().zip(figures) {
                if !figure.is_nan() {
                    sample.push(figure);
                }
            }
        }
        let exported = recorder.handle().render();
        assert!(
            exported.contains("idem_calls_total"),
            "the Prometheus recorder saw the replays:\n{exported}"
        );
        // Once a subscriber has been installed, tracing's call sites go on asking whether one
        // wants them for the rest of the process: these rounds come last, so as not to weigh
        // on the rows above, which measure a program that installs none.
        for _ in 0..ROUNDS {
            let replay = listened(time_per_call(|_| async {
                std::hint::black_box(idempotent_charge(&idem, &replayed, TTL).await.unwrap());
            }))
            .await;
            let cached_replay = listened(time_per_call(|_| async {
                std::hint::black_box(idempotent_charge(&cached, &replayed, TTL).await.unwrap());
            }))
            .await;
            samples[6].push(replay);
            samples[7].push(cached_replay);
        }
        names
            .into_iter()
            .zip(samples.into_iter().map(median))
            .collect()
    })
}

/// Calls per second of `op` run by `callers` tasks for `length`; `op` gets the caller's index
/// and a count that grows with every call.
async fn per_second<F, Fut>(callers: usize, length: Duration, op: F) -> f64
where
    F: Fn(usize, u64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|caller| {
            let (op, stop, done) = (op.clone(), stop.clone(), done.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    op(caller, n).await;
                    n += 1;
                    // Lets the other callers of this worker in, as a real await would.
                    tokio::task::yield_now().await;
                }
                done.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    tokio::time::sleep(length).await;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// Replays and fresh calls per second for each number of callers: `(callers, replays on
/// distinct keys, replays of one hot key, fresh calls on distinct keys)`.
fn concurrent(length: Duration) -> Vec<(usize, f64, f64, f64)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut rows = Vec::new();
        for callers in CALLERS {
            let idem = Idempotency::new(MemoryStore::new());
            let requests: Arc<Vec<ChargeRequest>> =
                Arc::new((0..callers as u64).map(request).collect());
            for req in requests.iter() {
                idempotent_charge(&idem, req, TTL).await.unwrap();
            }
            let distinct = {
                let (idem, requests) = (idem.clone(), requests.clone());
                per_second(callers, length, move |caller, _| {
                    let (idem, requests) = (idem.clone(), requests.clone());
                    async move {
                        idempotent_charge(&idem, &requests[caller], TTL)
                            .await
                            .unwrap();
                    }
                })
                .await
            };
            let hot = {
                let (idem, requests) = (idem.clone(), requests.clone());
                per_second(callers, length, move |_, _| {
                    let (idem, requests) = (idem.clone(), requests.clone());
                    async move {
                        idempotent_charge(&idem, &requests[0], TTL).await.unwrap();
                    }
                })
                .await
            };
            let fresh = {
                let idem = Idempotency::new(MemoryStore::new());
                per_second(callers, length, move |caller, n| {
                    let idem = idem.clone();
                    async move {
                        let req = request(((caller as u64) << 40) + n + 1_000_000);
                        idempotent_charge(&idem, &req, TTL).await.unwrap();
                    }
                })
                .await
            };
            rows.push((callers, distinct, hot, fresh));
        }
        rows
    })
}

/// Median ns per refused call of a store full with `records` live records, for each size.
fn refusals() -> Vec<(usize, f64)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut stores = Vec::new();
        for records in FULL_SIZES {
            let idem = Idempotency::new(MemoryStore::builder().max_records(records).build());
            for order in 0..records as u64 {
                idempotent_charge(&idem, &request(order), TTL)
                    .await
                    .unwrap();
            }
            stores.push(idem);
        }
        let mut samples = vec![Vec::new(); stores.len()];
        let next_order = AtomicU64::new(u64::MAX / 2);
        for _ in 0..ROUNDS {
            for (idem, sample) in stores.iter().zip(&mut samples) {
                let started = Instant::now();
                for _ in 0..REFUSALS_PER_ROUND {
                    let req = request(next_order.fetch_add(1, Ordering::Relaxed));
                    let refused = idempotent_charge(idem, &req, TTL).await;
                    assert!(refused.is_err(), "a full store refuses");
                }
                sample.push(started.elapsed().as_nanos() as f64 / REFUSALS_PER_ROUND as f64);
            }
        }
        FULL_SIZES
            .into_iter()
            .zip(samples.into_iter().map(median))
            .collect()
    })
}

fn main() {
    let length = Duration::from_millis(
        std::env::var("IDEM_BENCH_MILLIS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1_000),
    );
    let size = serde_json::to_vec(&request(0)).unwrap().len();
    let figures = sequential();
    let ns = |name: &str| figures.iter().find(|(n, _)| *n == name).unwrap().1;
    // The fingerprint rows, last, get a table of their own.
    let fingerprints_from = figures
        .iter()
        .position(|(name, _)| *name == "idem fingerprint")
        .unwrap();
    let (replays, fingerprints) = figures.split_at(fingerprints_from);
    let floor = ns("replay floor");
    println!("### Memory store, one caller, {size}-byte request");
    println!();
    println!("Median of {ROUNDS} interleaved rounds of {CALLS_PER_ROUND} calls each.");
    println!();
    println!("| what | ns per call | × replay floor |");
    println!("|---|---|---|");
    for (name, figure) in replays {
        println!("| {name} | {figure:.0} | {:.2}× |", figure / floor);
    }
    println!();
    println!("#### Goals of the memory store");
    println!();
    println!("| goal | measured | verdict |");
    println!("|---|---|---|");
    let goals = [
        (
            "memory replay ≤ 1.2× its floor, no replay cache",
            "replay",
            1.2,
        ),
        (
            "memory replay ≤ 1.1× its floor, replay cache on",
            "replay, replay cache on",
            1.1,
        ),
        (
            "memory replay ≤ 1.3× its floor, recorder and subscriber installed",
            "replay, recorder and subscriber installed",
            1.3,
        ),
        (
            "memory replay with the Prometheus recorder installed ≤ 1.5× its floor",
            "replay, Prometheus recorder",
            1.5,
        ),
    ];
    for (goal, name, most) in goals {
        let ratio = ns(name) / floor;
        println!("| {goal} | {ratio:.2}× | {} |", verdict(ratio, most));
    }
    println!();
    println!("### Fingerprint of the {size}-byte request");
    println!();
    println!("| what | ns | × serde_json + SHA-256 |");
    println!("|---|---|---|");
    let baseline = ns("serde_json::to_vec + SHA-256");
    for (name, figure) in fingerprints {
        println!("| {name} | {figure:.0} | {:.2}× |", figure / baseline);
    }
    println!();
    println!("### Memory store, full: refusing a new key");
    println!();
    println!(
        "`max_records` reached with live records only; median of {ROUNDS} interleaved rounds \
         of {REFUSALS_PER_ROUND} refused calls."
    );
    println!();
    println!("| live records held | ns per refused call | × the smallest store |");
    println!("|---|---|---|");
    let refused = refusals();
    let smallest = refused[0].1;
    for (records, figure) in &refused {
        println!("| {records} | {figure:.0} | {:.2}× |", figure / smallest);
    }
    println!();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("### Memory store, concurrent callers");
    println!();
    println!("{threads} worker threads; {length:?} per phase; calls per second.");
    println!();
    println!("| callers | replays, distinct keys | replays, one hot key | hot / distinct | fresh calls, distinct keys |");
    println!("|---|---|---|---|---|");
    for (callers, distinct, hot, fresh) in concurrent(length) {
        println!(
            "| {callers} | {distinct:.0} | {hot:.0} | {:.2}× | {fresh:.0} |",
            hot / distinct
        );
    }
}
