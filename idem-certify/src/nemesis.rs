//! The worker processes and the faults injected into them until the deadline: kills, stops
//! (every other move, aimed at a key's owner when one is found, see [`aimed`]), network
//! faults through each worker's proxy, and restarts of the store.

mod aimed;

use std::path::Path;
use std::time::Duration;

use tokio::runtime::Handle;

use crate::args::FaultKind;
use crate::check::model::FaultRecord;
use crate::cluster_faults;
use crate::history::now_micros;
use crate::plan::{StoreSpec, WorkerPlan};
use crate::processes::WorkerProcess;
use crate::proxies::{through, NetFault, Proxy};
use crate::servers::Target;
use crate::workload::board::board_dir;

/// What the nemesis needs to start a worker.
pub(crate) struct Workers<'a> {
    /// How many slots.
    pub(crate) count: u32,
    /// The plan of a worker named `name`, with its seed and clock offset.
    pub(crate) plan: &'a dyn Fn(String, u64, i64) -> WorkerPlan,
    /// Where the workers' logs go.
    pub(crate) dir: &'a Path,
    /// The run's seed.
    pub(crate) seed: u64,
    /// The lease of every call.
    pub(crate) lease: Duration,
    /// When the workers stop calling, in microseconds since the epoch.
    pub(crate) until: u64,
}

/// One worker slot: its current process, and the proxy its processes reach the store through.
struct Slot {
    index: u32,
    incarnation: u32,
    process: WorkerProcess,
    proxy: Option<Proxy>,
}

/// What the nemesis did: the faults injected, and each worker process's clock offset in
/// milliseconds.
pub(crate) struct Injected {
    /// The faults.
    pub(crate) faults: Vec<FaultRecord>,
    /// The offsets, by process.
    pub(crate) clock_offsets: Vec<(String, i64)>,
}

/// Runs the workers to the deadline while injecting `faults`. Blocks: call it where blocking
/// is allowed.
pub(crate) fn run(
    workers: &Workers<'_>,
    target: &mut Target,
    faults: &[FaultKind],
) -> Result<Injected, String> {
    let runtime = Handle::current();
    let mut rng = fastrand::Rng::with_seed(workers.seed);
    let lease = workers.lease;
    let lease_ms = lease.as_millis() as u64;
    let mut offsets = Vec::new();
    let offset = |rng: &mut fastrand::Rng| -> i64 {
        let quarter = (lease_ms / 4) as i64;
        if faults.contains(&FaultKind::ClockBeyond) {
            let by = rng.i64(lease_ms as i64..=2 * lease_ms as i64);
            if rng.bool() {
                by
            } else {
                -by
            }
        } else if faults.contains(&FaultKind::Clock) {
            rng.i64(-quarter..=quarter)
        } else {
            0
        }
    };
    let mut start = |slot: u32,
                     incarnation: u32,
                     proxy: Option<&Proxy>,
                     rng: &mut fastrand::Rng|
     -> Result<WorkerProcess, String> {
        let name = format!("w{slot}.{incarnation}");
        let clock_offset = offset(rng);
        offsets.push((name.clone(), clock_offset));
        let mut plan = (workers.plan)(
            name.clone(),
            workers.seed + u64::from(slot * 1_000 + incarnation),
            clock_offset,
        );
        if let Some(proxy) = proxy {
            plan.store = plan.store.take().map(|spec| proxied(spec, &proxy.listen));
        }
        WorkerProcess::start(&plan, &workers.dir.join(format!("{name}.log")))
    };
    let proxied_faults = faults.contains(&FaultKind::Net);
    let mut slots = Vec::new();
    for index in 0..workers.count {
        let proxy = match (&target.spec, proxied_faults) {
            (Some(spec), true) => Some(runtime.block_on(proxy_for(spec, index))?),
            _ => None,
        };
        let process = start(index, 1, proxy.as_ref(), &mut rng)?;
        slots.push(Slot {
            index,
            incarnation: 1,
            process,
            proxy,
        });
    }
    let injected: Vec<FaultKind> = faults
        .iter()
        .copied()
        .filter(|fault| {
            matches!(
                fault,
                FaultKind::Kill
                    | FaultKind::Stop
                    | FaultKind::Net
                    | FaultKind::Restart
                    | FaultKind::Reshard
                    | FaultKind::Failover
                    | FaultKind::ReplicaLoss
            )
        })
        .collect();
    let mut log = Vec::new();
    let (mut reshards, mut failovers, mut replicas_lost) = (0, 0, 0);
    let board = board_dir(workers.dir);
    let mut moves = 0_u32;
    while !injected.is_empty() {
        let pause = Duration::from_millis(rng.u64(300..1_000));
        if now_micros() + (pause + lease * 3).as_micros() as u64 > workers.until {
            break;
        }
        std::thread::sleep(pause);
        // A stop is the one fault that makes a stale owner wake up and act as if it still
        // held its key: every other move is one, aimed when it can be.
        moves += 1;
        let kind = if injected.contains(&FaultKind::Stop) && moves % 2 == 1 {
            FaultKind::Stop
        } else {
            injected[rng.usize(..injected.len())]
        };
        let mut index = rng.usize(..workers.count as usize);
        let mut aimed_at = None;
        // How long after the takeover the owner wakes: at once after a slow body's (see
        // `aimed::takers`), a moment later after a step's.
        let mut resume_within = lease / 4;
        if kind == FaultKind::Stop {
            let processes: Vec<(&str, i64)> = (slots.iter())
                .map(|slot| (slot.process.name.as_str(), slot.process.clock_offset_ms))
                .collect();
            // Every other aimed stop, a slow body with most of its pause ahead: stopped until
            // its key is taken over, it wakes with time left to renew and act. The others, a
            // step waiting for its answer: it wakes and records the step.
            let in_step = (moves / 2) % 2 == 1;
            if let Some(holder) =
                aimed::find_holder(&board, &processes, in_step, lease, lease * 3 / 2, &mut rng)
            {
                index = processes
                    .iter()
                    .position(|&(process, _)| process == holder.process)
                    .expect("a holder is one of the slots' processes");
                let takers = match holder.in_step {
                    true => Vec::new(),
                    false => {
                        resume_within = lease / 50;
                        aimed::takers(&processes, &holder.process, lease_ms as i64 / 8)
                    }
                };
                aimed::aim(&board, &holder.key, lease * 3, takers);
                aimed_at = Some(holder.key);
            }
        }
        let slot = &mut slots[index];
        let at = now_micros();
        let record = |kind: &'static str, process: &str, end: u64| FaultRecord {
            kind,
            process: process.to_owned(),
            start: at,
            end,
        };
        match kind {
            FaultKind::Kill => {
                slot.process.kill();
                log.push(record("kill", &slot.process.name, at));
                slot.incarnation += 1;
                slot.process = start(slot.index, slot.incarnation, slot.proxy.as_ref(), &mut rng)?;
            }
            FaultKind::Stop => {
                slot.process.stop();
                match &aimed_at {
                    Some(key) => {
                        let took =
                            aimed::await_takeover(&board, key, lease * 3, resume_within, &mut rng);
                        aimed::unaim(&board);
                        // For whoever reads the run's log: how often the aim comes true.
                        let name = &slot.process.name;
                        match took {
                            Some(took) => eprintln!(
                                "aimed stop: {name} held {key}, taken over after {} ms",
                                took.as_millis()
                            ),
                            None => eprintln!("aimed stop: {name} held {key}, not taken over"),
                        }
                    }
                    None => {
                        std::thread::sleep(lease * 3 / 2 + Duration::from_millis(rng.u64(..1_000)))
                    }
                }
                slot.process.resume();
                log.push(record("stop", &slot.process.name, now_micros()));
            }
            FaultKind::Net => {
                let fault = NetFault::ALL[rng.usize(..NetFault::ALL.len())];
                let proxy = slot.proxy.as_mut().expect("net faults come with proxies");
                runtime.block_on(proxy.inject(fault, lease_ms, &mut rng));
                std::thread::sleep(lease + Duration::from_millis(rng.u64(..lease_ms)));
                runtime.block_on(proxy.heal(fault))?;
                log.push(record(fault.name(), &slot.process.name, now_micros()));
            }
            FaultKind::Restart => {
                target.restart()?;
                log.push(record("restart", "*", now_micros()));
            }
            FaultKind::Reshard => {
                // Slots move under the workers' feet; no process is excused by it: the store
                // keeps its promises through a reshard.
                cluster_faults::reshard(target.cluster()?, reshards, rng.u32(200..1_500))?;
                reshards += 1;
                log.push(record("reshard", "cluster", now_micros()));
            }
            FaultKind::Failover => {
                // A shard is down until its replica takes over; no process is excused by it
                // either: an owner that cannot renew is told by its own clock, and a write
                // confirmed by the replica survives the promotion.
                cluster_faults::failover(target.cluster()?, failovers)?;
                failovers += 1;
                log.push(record("failover", "cluster", now_micros()));
            }
            FaultKind::ReplicaLoss => {
                // The shard's writes go on reaching its primary, and fail for want of the
                // replica's confirmation: what they applied must not count as lost.
                let down = lease * 2 + Duration::from_millis(rng.u64(..lease_ms));
                cluster_faults::lose_replica(target.cluster()?, replicas_lost, down)?;
                replicas_lost += 1;
                log.push(record("replica-loss", "cluster", now_micros()));
            }
            FaultKind::None | FaultKind::Clock | FaultKind::ClockBeyond => {}
        }
    }
    // Workers stop calling at the deadline and finish what they began: the slowest call
    // pauses for four leases, a waiter waits three.
    let grace = workers.until + (lease * 8 + Duration::from_secs(10)).as_micros() as u64;
    for slot in &mut slots {
        while !slot.process.exited() && now_micros() < grace {
            std::thread::sleep(Duration::from_millis(50));
        }
        if let Some(failure) = slot.process.failure() {
            return Err(format!(
                "worker {} failed ({failure}): see {}",
                slot.process.name,
                workers
                    .dir
                    .join(format!("{}.log", slot.process.name))
                    .display()
            ));
        }
        if !slot.process.exited() {
            let at = now_micros();
            slot.process.kill();
            log.push(FaultRecord {
                kind: "kill",
                process: slot.process.name.clone(),
                start: at,
                end: at,
            });
        }
    }
    Ok(Injected {
        faults: log,
        clock_offsets: offsets,
    })
}

/// Whether net faults can reach every connection to the store `spec` names: not a cluster,
/// whose nodes send clients to their own addresses.
pub(crate) fn proxiable(spec: Option<&StoreSpec>) -> bool {
    matches!(
        spec,
        Some(StoreSpec::Redis { .. } | StoreSpec::Postgres { .. } | StoreSpec::DynamoDb { .. })
    )
}

/// A proxy to the store `spec` names, for slot `slot`.
pub(crate) async fn proxy_for(spec: &StoreSpec, slot: u32) -> Result<Proxy, String> {
    let url = match spec {
        StoreSpec::Redis { url } | StoreSpec::Postgres { url } => url,
        StoreSpec::DynamoDb { endpoint, .. } => endpoint,
        StoreSpec::RedisCluster { .. } => return Err("a cluster can't be proxied".into()),
    };
    let (_, upstream) =
        through(url, "127.0.0.1:0").ok_or_else(|| format!("no host:port in {url}"))?;
    Proxy::start(&format!("w{slot}"), &upstream).await
}

/// `spec` reached through the proxy listening on `listen`: a worker's store, or a front-end
/// server's.
pub(crate) fn proxied(spec: StoreSpec, listen: &str) -> StoreSpec {
    let via = |url: &str| through(url, listen).map_or_else(|| url.to_owned(), |(url, _)| url);
    match spec {
        StoreSpec::Redis { url } => StoreSpec::Redis { url: via(&url) },
        StoreSpec::Postgres { url } => StoreSpec::Postgres { url: via(&url) },
        StoreSpec::DynamoDb { endpoint, table } => StoreSpec::DynamoDb {
            endpoint: via(&endpoint),
            table,
        },
        cluster @ StoreSpec::RedisCluster { .. } => cluster,
    }
}
