//! How a memory-store replay's cost grows with the live keys the store holds, as a markdown
//! table beside the replay's floor (the one `memory_report` measures against).
//!
//! ```text
//! cargo bench -p idem-stores --bench memory_scaling
//! ```
//!
//! For each count of live completed keys (`IDEM_BENCH_KEYS`, default `1000,100000,1000000`),
//! one store is filled with that many charges through `Idempotency`, and uniformly random keys
//! among them are replayed: through a handle without a replay cache, through one whose cache
//! holds every key, and through one with the 10 000-entry cache the other benches use (beyond
//! 10 000 keys a random replay mostly misses it: that column is what a cache that misses
//! costs). The floor is measured on random requests of the same store.
//!
//! Each figure is the median of batches of 64 replays timed with one `Instant` (the batch's
//! requests built before it), divided by 64; the columns' batches interleave, `ROUNDS` rounds
//! of `IDEM_BENCH_BATCHES` (default 300) batches each, after one round of warm-up. The
//! resident memory per key is the growth of the process's resident set (`VmRSS`) over the
//! fill (and over the first pass through the cache of every key), divided by the keys; every
//! count's store is kept to the end, so that none reuses memory another one freed.

use std::time::{Duration, Instant};

use idem_core::{Idempotency, ReplayCache};
use idem_stores::memory::MemoryStore;

mod charge;
mod figures;
mod replay_floor;
use charge::{idempotent_charge, request, ChargeRequest};
use figures::{median, verdict};
use replay_floor::{replay_floor, stored_result};

const ROUNDS: usize = 7;
/// Replays timed together with one `Instant`.
const BATCH: usize = 64;
/// Outlives the run, so that every key stays live.
const TTL: Duration = Duration::from_secs(3600);
/// The replay cache of `memory_report` and `layer_overhead`: entries and bytes.
const BOUNDED_CACHE: (usize, usize) = (10_000, 16 << 20);
/// The columns, in the order they are measured and printed.
const COLUMNS: [&str; 4] = [
    "replay floor",
    "replay",
    "replay, cache of every key",
    "replay, cache of 10 000",
];

/// A small deterministic generator (SplitMix64): the same keys in every run.
struct Random(u64);

impl Random {
    /// A number uniformly in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((u128::from(z) * u128::from(n)) >> 64) as u64
    }
}

/// One count of live keys: its store, filled, and the handles that replay from it.
struct Filled {
    keys: u64,
    store: MemoryStore,
    plain: Idempotency,
    every_key: Idempotency,
    bounded: Idempotency,
    /// Resident bytes per key that the fill added, when known.
    store_bytes: Option<f64>,
    /// Resident bytes per key that the first pass through the cache of every key added.
    cache_bytes: Option<f64>,
}

/// One row of the table: a count of live keys, the median ns per replay of each of `COLUMNS`,
/// and the resident bytes per key.
struct Row {
    keys: u64,
    figures: Vec<f64>,
    store_bytes: Option<f64>,
    cache_bytes: Option<f64>,
}

impl Row {
    /// The median ns per replay of `column`, over the floor's.
    fn over_floor(&self, column: usize) -> f64 {
        self.figures[column] / self.figures[0]
    }
}

/// The process's resident set, in bytes, when `/proc` says.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Bytes per key between two readings of the resident set.
fn per_key(before: Option<u64>, after: Option<u64>, keys: u64) -> Option<f64> {
    Some(after?.saturating_sub(before?) as f64 / keys as f64)
}

/// A store filled with `keys` charges, the cache of every key filled too.
async fn fill(keys: u64) -> Filled {
    let store = MemoryStore::new();
    let plain = Idempotency::new(store.clone());
    let before = resident_bytes();
    for order in 0..keys {
        idempotent_charge(&plain, &request(order), TTL)
            .await
            .unwrap();
    }
    let filled = resident_bytes();
    assert_eq!(store.len() as u64, keys, "one record per charge");
    let every_key = Idempotency::new(store.clone())
        .with_replay_cache(ReplayCache::new(keys as usize, keys as usize * 1024).with_max_age(TTL));
    for order in 0..keys {
        idempotent_charge(&every_key, &request(order), TTL)
            .await
            .unwrap();
    }
    let cached = resident_bytes();
    let cache = every_key.replay_cache().unwrap();
    assert_eq!(cache.len() as u64, keys, "the cache holds every key");
    let (entries, bytes) = BOUNDED_CACHE;
    let bounded = Idempotency::new(store.clone())
        .with_replay_cache(ReplayCache::new(entries, bytes).with_max_age(TTL));
    Filled {
        keys,
        store,
        plain,
        every_key,
        bounded,
        store_bytes: per_key(before, filled, keys),
        cache_bytes: per_key(filled, cached, keys),
    }
}

/// Nanoseconds per replay of `requests` through `idem`, timed together.
async fn replays(idem: &Idempotency, requests: &[ChargeRequest]) -> f64 {
    let started = Instant::now();
    for req in requests {
        std::hint::black_box(idempotent_charge(idem, req, TTL).await.unwrap());
    }
    started.elapsed().as_nanos() as f64 / requests.len() as f64
}

/// Nanoseconds per replay floor of `requests`, whose stored results are `stored`.
fn floors(idem: &Idempotency, requests: &[ChargeRequest], stored: &[Vec<u8>]) -> f64 {
    let started = Instant::now();
    for (req, stored) in requests.iter().zip(stored) {
        std::hint::black_box(replay_floor(idem, req, stored));
    }
    started.elapsed().as_nanos() as f64 / requests.len() as f64
}

/// The median ns per replay of each of `COLUMNS` among `filled`'s keys.
async fn measure(filled: &Filled, batches: usize, random: &mut Random) -> Vec<f64> {
    let mut samples = vec![Vec::with_capacity(ROUNDS * batches); COLUMNS.len()];
    for round in 0..=ROUNDS {
        for _ in 0..batches {
            for (column, sample) in samples.iter_mut().enumerate() {
                let requests: Vec<ChargeRequest> = (0..BATCH)
                    .map(|_| request(random.below(filled.keys)))
                    .collect();
                let ns = match column {
                    0 => {
                        let mut stored = Vec::with_capacity(BATCH);
                        for req in &requests {
                            stored.push(stored_result(req).await);
                        }
                        floors(&filled.plain, &requests, &stored)
                    }
                    1 => replays(&filled.plain, &requests).await,
                    2 => replays(&filled.every_key, &requests).await,
                    _ => replays(&filled.bounded, &requests).await,
                };
                // Round 0 warms the caches up.
                if round > 0 {
                    sample.push(ns);
                }
            }
        }
    }
    assert_eq!(
        filled.store.len() as u64,
        filled.keys,
        "every replay found its key: none ran the charge again"
    );
    samples.into_iter().map(median).collect()
}

fn env_text(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|text| !text.trim().is_empty())
}

/// `1000000` as `1 000 000`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut text = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            text.push(' ');
        }
        text.push(digit);
    }
    text
}

fn bytes_cell(bytes: Option<f64>) -> String {
    bytes.map_or_else(|| "?".to_owned(), |bytes| format!("{bytes:.0}"))
}

fn main() {
    let counts: Vec<u64> = env_text("IDEM_BENCH_KEYS")
        .unwrap_or_else(|| "1000,100000,1000000".to_owned())
        .split(',')
        .map(|count| {
            count
                .trim()
                .parse()
                .expect("IDEM_BENCH_KEYS lists counts of keys, e.g. 1000,100000")
        })
        .filter(|&count| count > 0)
        .collect();
    assert!(
        !counts.is_empty(),
        "IDEM_BENCH_KEYS lists at least one count"
    );
    let batches: usize = env_text("IDEM_BENCH_BATCHES")
        .map(|text| text.trim().parse().expect("IDEM_BENCH_BATCHES is a number"))
        .unwrap_or(300)
        .max(1);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let rows: Vec<Row> = runtime.block_on(async {
        let mut stores = Vec::new();
        for &keys in &counts {
            stores.push(fill(keys).await);
        }
        let mut random = Random(0x1de4_5ca1_1a6e);
        let mut rows = Vec::new();
        for filled in &stores {
            rows.push(Row {
                keys: filled.keys,
                figures: measure(filled, batches, &mut random).await,
                store_bytes: filled.store_bytes,
                cache_bytes: filled.cache_bytes,
            });
        }
        rows
    });
    println!("### Memory store, replays among many live keys");
    println!();
    println!(
        "One caller; uniformly random keys among the live completed keys. Median of batches of \
         {BATCH} replays timed together, {ROUNDS} interleaved rounds of {batches} batches per \
         column; ns per replay. The cache of 10 000 entries is the other benches' size: beyond \
         10 000 keys a random replay mostly misses it. Resident bytes per key: what the fill, \
         then the cache of every key, added to the process's resident set."
    );
    println!();
    println!(
        "| live keys | {} ns | {} ns | × floor | {} ns | × floor | {} ns | × floor | resident bytes per key: store, cache of every key |",
        COLUMNS[0], COLUMNS[1], COLUMNS[2], COLUMNS[3]
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for row in &rows {
        let figures = &row.figures;
        println!(
            "| {} | {:.0} | {:.0} | {:.2}× | {:.0} | {:.2}× | {:.0} | {:.2}× | {}, {} |",
            grouped(row.keys),
            figures[0],
            figures[1],
            row.over_floor(1),
            figures[2],
            row.over_floor(2),
            figures[3],
            row.over_floor(3),
            bytes_cell(row.store_bytes),
            bytes_cell(row.cache_bytes),
        );
    }
    let (smallest, largest) = (&rows[0], &rows[rows.len() - 1]);
    println!();
    println!("#### Goals of the memory store among many live keys");
    println!();
    println!("| goal | measured | verdict |");
    println!("|---|---|---|");
    let against_floor = largest.over_floor(1);
    println!(
        "| memory replay among {} live keys ≤ 1.5× its floor, no replay cache | {against_floor:.2}× | {} |",
        grouped(largest.keys),
        verdict(against_floor, 1.5)
    );
    if rows.len() > 1 {
        let growth = largest.figures[1] / smallest.figures[1];
        println!(
            "| memory replay among {} live keys ≤ 1.3× the same among {}, no replay cache | {growth:.2}× | {} |",
            grouped(largest.keys),
            grouped(smallest.keys),
            verdict(growth, 1.3)
        );
    }
}
