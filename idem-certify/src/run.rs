//! A run: the store started, workers calling while faults are injected, then the histories
//! read, the final records fetched, checked and reported.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use idem_core::{
    store::{Record, Store},
    Idempotency,
};

use crate::args::{FaultKind, RunArgs, StoreKind};
use crate::check::model::{FinalRecord, Run};
use crate::check::{check, Findings};
use crate::connect::wrap;
use crate::history::{self, now_micros, HistoryWriter};
use crate::nemesis::{self, Workers};
use crate::out_dir;
use crate::plan::WorkerPlan;
use crate::report::{Report, Setup};
use crate::servers::Target;
use crate::worker::run_all;
use crate::workload::board::BOARD;
use crate::workload::{run_key, BodyError};

/// How late the news of a lost lease may be written after the takeover it allowed, beyond
/// clock skew: the timer's and the watcher task's scheduling.
const TOLD_SLACK_MICROS: u64 = 50_000;

/// What a run found: its report, and where it was written.
pub(crate) struct Outcome {
    /// The report.
    pub(crate) report: Report,
    /// Its directory.
    pub(crate) dir: PathBuf,
}

/// Runs `args`.
pub(crate) async fn run(args: &RunArgs) -> Result<Outcome, String> {
    if let Some(front) = args.front {
        return crate::front::run(args, front).await;
    }
    let kind = args
        .store
        .ok_or("pass --store memory|redis|redis-cluster|postgres|dynamodb")?;
    if let Some(broken) = &args.broken {
        crate::connect::broken_fault(broken)?;
    }
    let restartable = Target::can_restart(kind, args.url.as_deref());
    let faults = faults_of(args, kind, restartable)?;
    let target = Target::start(
        kind,
        args.url.as_deref(),
        faults.contains(&FaultKind::Restart),
        faults.iter().any(|fault| fault.needs_replicas()),
    )
    .await?;
    if faults.contains(&FaultKind::Net) && !crate::nemesis::proxiable(target.spec.as_ref()) {
        return Err("net faults need a store behind one address: not a cluster".to_owned());
    }
    run_on(args, target, &faults, &format!("{kind:?}")).await
}

/// Runs the workload on `target` with `faults`, then checks and reports.
async fn run_on(
    args: &RunArgs,
    mut target: Target,
    faults: &[FaultKind],
    name: &str,
) -> Result<Outcome, String> {
    let seed = args.seed.unwrap_or_else(now_micros);
    let dir = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("target/certify").join(format!("{name}-{}", seed % 1_000_000))
    });
    out_dir::fresh(&dir, &["histories", BOARD])?;
    let histories = dir.join("histories");
    let run_id = format!("run{seed}");
    let until = now_micros() + args.seconds * 1_000_000;
    let spec = target.spec.clone();
    let plan = |name: String, seed: u64, clock_offset_ms: i64| WorkerPlan {
        history: histories.join(format!("{name}.jsonl")),
        name,
        store: spec.clone(),
        broken: args.broken.clone(),
        run: run_id.clone(),
        until_micros: until,
        lease_ms: args.lease_ms,
        seed,
        clock_offset_ms,
    };
    let (fault_log, clock_offsets) = match target.memory.clone() {
        Some(store) => {
            in_process(args, store, &plan, seed).await?;
            (Vec::new(), Vec::new())
        }
        None => {
            let workers = Workers {
                count: args.workers,
                plan: &plan,
                dir: &dir,
                seed,
                lease: Duration::from_millis(args.lease_ms),
                until,
            };
            // The nemesis sleeps between faults, its proxies on this runtime's other threads.
            let injected =
                tokio::task::block_in_place(|| nemesis::run(&workers, &mut target, faults))?;
            (injected.faults, injected.clock_offsets)
        }
    };
    let largest_offset = clock_offsets
        .iter()
        .map(|(_, offset): &(String, i64)| offset.unsigned_abs())
        .max()
        .unwrap_or(0);
    let mut run = Run {
        faults: fault_log,
        ended: now_micros(),
        told_within: 2 * largest_offset * 1_000 + TOLD_SLACK_MICROS,
        lease: args.lease_ms * 1_000,
        ..Run::default()
    };
    for (process, events) in history::read_all(&histories)? {
        run.add_history(&process, events);
    }
    if run.calls.is_empty() {
        return Err(format!(
            "no call was made: see the workers' logs in {}",
            dir.display()
        ));
    }
    let idem = Idempotency::from_arc(target.store().await?);
    let keys: BTreeSet<String> = run.calls.values().map(|call| call.key.clone()).collect();
    for key in keys {
        let record = final_record(&idem, &run_id, &key).await;
        run.finals.insert(key, record);
    }
    let findings: Findings = check(&run);
    let setup = Setup {
        store: target.described.clone(),
        broken: args.broken.clone(),
        seconds: args.seconds,
        workers: args.workers,
        faults: faults.iter().map(|fault| fault.name()).collect(),
        lease_ms: args.lease_ms,
        seed,
        clock_offsets_ms: clock_offsets,
    };
    let report = Report::new(setup, &run, &findings);
    report.write(&dir)?;
    Ok(Outcome { report, dir })
}

fn faults_of(args: &RunArgs, kind: StoreKind, restartable: bool) -> Result<Vec<FaultKind>, String> {
    let faults: Vec<FaultKind> = match args.named_faults() {
        Some(faults) => faults,
        None if kind == StoreKind::Memory => Vec::new(),
        None => {
            let mut faults = vec![FaultKind::Kill, FaultKind::Stop, FaultKind::Clock];
            if kind == StoreKind::RedisCluster {
                faults.push(FaultKind::Reshard);
            } else {
                faults.push(FaultKind::Net);
            }
            if restartable {
                faults.push(FaultKind::Restart);
            }
            faults
        }
    };
    if kind == StoreKind::Memory && !faults.is_empty() {
        return Err(
            "memory's workers share this process: its faults are the workload's own stalls and \
             abandoned calls; kill, stop, net, restart and clock need a store with a server"
                .to_owned(),
        );
    }
    let own_cluster = kind == StoreKind::RedisCluster && args.url.is_none();
    if let Some(fault) = faults
        .iter()
        .find(|f| f.needs_own_cluster() && !own_cluster)
    {
        return Err(format!(
            "{} needs a Redis Cluster this run starts (not --url)",
            fault.name()
        ));
    }
    if faults.contains(&FaultKind::Restart) && !restartable {
        return Err(
            "restart needs a Redis or PostgreSQL server this run starts (not --url, not \
             DynamoDB, whose emulator keeps nothing through a restart)"
                .to_owned(),
        );
    }
    Ok(faults)
}

/// Workers as tasks of this process, on one memory store.
async fn in_process(
    args: &RunArgs,
    store: Arc<dyn Store>,
    plan: &dyn Fn(String, u64, i64) -> WorkerPlan,
    seed: u64,
) -> Result<(), String> {
    let store = wrap(store, args.broken.as_deref())?;
    let mut workers = Vec::new();
    for slot in 0..args.workers {
        let plan = plan(format!("w{slot}.1"), seed + u64::from(slot), 0);
        let history = HistoryWriter::create(&plan.history)
            .map_err(|error| format!("{}: {error}", plan.history.display()))?;
        let idem = Idempotency::from_arc(store.clone());
        workers.push(tokio::spawn(run_all(plan, idem, Arc::new(history))));
    }
    for worker in workers {
        worker
            .await
            .map_err(|error| format!("a worker failed: {error}"))?;
    }
    Ok(())
}

/// What the store holds for `key` of run `run_id`.
async fn final_record(idem: &Idempotency, run_id: &str, key: &str) -> FinalRecord {
    let stored = run_key(idem, run_id, key);
    match idem.store().get(&stored).await {
        Ok(None) => FinalRecord::Absent,
        Ok(Some(Record::InProgress(_))) => FinalRecord::InProgress,
        Ok(Some(Record::Completed(completed))) => {
            let outcome = completed.outcome();
            let answer = if outcome.is_ok() {
                serde_json::from_slice::<String>(outcome.body()).ok()
            } else {
                match serde_json::from_slice::<BodyError>(outcome.body()) {
                    Ok(BodyError::Declined(answer)) => Some(answer),
                    _ => None,
                }
            };
            FinalRecord::Completed { answer }
        }
        Ok(Some(_)) => FinalRecord::Unreadable {
            error: "a record of a kind this checker does not know".to_owned(),
        },
        Err(error) => FinalRecord::Unreadable {
            error: error.to_string(),
        },
    }
}
