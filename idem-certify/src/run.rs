//! A run: the store started, workers calling while faults are injected, then the histories
//! read, the final records fetched, checked and reported.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use idem_core::{Idempotency, Record, Store};

use crate::args::{FaultKind, RunArgs, StoreKind};
use crate::check::model::{FaultRecord, FinalRecord, Run};
use crate::check::{check, Findings};
use crate::connect::wrap;
use crate::history::{self, now_micros, HistoryWriter};
use crate::plan::WorkerPlan;
use crate::processes::WorkerProcess;
use crate::report::{Report, Setup};
use crate::servers::Target;
use crate::worker::run_all;
use crate::workload::BodyError;

/// What a run found: its report, and where it was written.
pub struct Outcome {
    /// The report.
    pub report: Report,
    /// Its directory.
    pub dir: PathBuf,
}

/// Runs `args`.
pub async fn run(args: &RunArgs) -> Result<Outcome, String> {
    let kind = args
        .store
        .ok_or("pass --store memory|redis|redis-cluster|postgres|dynamodb")?;
    if let Some(broken) = &args.broken {
        crate::connect::broken_fault(broken)?;
    }
    let faults = faults_of(args, kind)?;
    let seed = args.seed.unwrap_or_else(now_micros);
    let dir = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("target/certify").join(format!("{kind:?}-{}", seed % 1_000_000))
    });
    let histories = dir.join("histories");
    fs::create_dir_all(&histories)
        .map_err(|error| format!("creating {}: {error}", histories.display()))?;
    let target = Target::start(kind, args.url.as_deref()).await?;
    let run_id = format!("run{seed}");
    let until = now_micros() + args.seconds * 1_000_000;
    let plan = |name: String, seed: u64| WorkerPlan {
        history: histories.join(format!("{name}.jsonl")),
        name,
        store: target.spec.clone(),
        broken: args.broken.clone(),
        run: run_id.clone(),
        until_micros: until,
        lease_ms: args.lease_ms,
        seed,
    };
    let fault_log = match &target.memory {
        Some(store) => {
            in_process(args, store.clone(), &plan, seed).await?;
            Vec::new()
        }
        // The fault loop sleeps between faults; nothing else runs on this runtime meanwhile.
        None => {
            tokio::task::block_in_place(|| in_processes(args, &dir, &faults, &plan, seed, until))?
        }
    };
    let mut run = Run {
        faults: fault_log,
        ended: now_micros(),
        ..Run::default()
    };
    for entry in fs::read_dir(&histories).map_err(|error| error.to_string())? {
        let path = entry.map_err(|error| error.to_string())?.path();
        let process = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .unwrap_or_default()
            .to_owned();
        let events = history::read(&path).map_err(|error| error.to_string())?;
        run.add_history(&process, events);
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
        faults: faults
            .iter()
            .map(|fault| format!("{fault:?}").to_lowercase())
            .collect(),
        lease_ms: args.lease_ms,
        seed,
    };
    let report = Report::new(setup, &run, &findings);
    report.write(&dir)?;
    Ok(Outcome { report, dir })
}

fn faults_of(args: &RunArgs, kind: StoreKind) -> Result<Vec<FaultKind>, String> {
    let faults: Vec<FaultKind> = match &args.faults {
        Some(faults) => faults
            .iter()
            .copied()
            .filter(|&fault| fault != FaultKind::None)
            .collect(),
        None if kind == StoreKind::Memory => Vec::new(),
        None => vec![FaultKind::Kill, FaultKind::Stop],
    };
    if kind == StoreKind::Memory && !faults.is_empty() {
        return Err(
            "memory's workers share this process: kill and stop need a store with a server"
                .to_owned(),
        );
    }
    Ok(faults)
}

/// Workers as tasks of this process, on one memory store.
async fn in_process(
    args: &RunArgs,
    store: Arc<dyn Store>,
    plan: &dyn Fn(String, u64) -> WorkerPlan,
    seed: u64,
) -> Result<(), String> {
    let store = wrap(store, args.broken.as_deref())?;
    let mut workers = Vec::new();
    for slot in 0..args.workers {
        let plan = plan(format!("w{slot}.1"), seed + u64::from(slot));
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

/// Worker processes, killed and stopped at random until the deadline; the faults injected.
fn in_processes(
    args: &RunArgs,
    dir: &Path,
    faults: &[FaultKind],
    plan: &dyn Fn(String, u64) -> WorkerPlan,
    seed: u64,
    until: u64,
) -> Result<Vec<FaultRecord>, String> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let lease = Duration::from_millis(args.lease_ms);
    let start = |slot: u32, incarnation: u32| -> Result<WorkerProcess, String> {
        let name = format!("w{slot}.{incarnation}");
        let log = dir.join(format!("{name}.log"));
        WorkerProcess::start(
            &plan(name, seed + u64::from(slot * 1_000 + incarnation)),
            &log,
        )
    };
    let mut slots: Vec<(u32, WorkerProcess)> = Vec::new();
    for slot in 0..args.workers {
        slots.push((1, start(slot, 1)?));
    }
    let mut log = Vec::new();
    while !faults.is_empty() {
        let pause = Duration::from_millis(rng.u64(1_000..2_500));
        if now_micros() + pause.as_micros() as u64 + lease.as_micros() as u64 * 3 > until {
            break;
        }
        std::thread::sleep(pause);
        let slot = rng.usize(..slots.len());
        let (incarnation, process) = &mut slots[slot];
        match faults[rng.usize(..faults.len())] {
            FaultKind::Kill => {
                let at = now_micros();
                process.kill();
                log.push(FaultRecord {
                    kind: "kill",
                    process: process.name.clone(),
                    start: at,
                    end: at,
                });
                *incarnation += 1;
                *process = start(slot as u32, *incarnation)?;
            }
            FaultKind::Stop => {
                let at = now_micros();
                process.stop();
                std::thread::sleep(lease * 3 / 2 + Duration::from_millis(rng.u64(..1_000)));
                process.resume();
                log.push(FaultRecord {
                    kind: "stop",
                    process: process.name.clone(),
                    start: at,
                    end: now_micros(),
                });
            }
            FaultKind::None => {}
        }
    }
    // Workers stop calling at the deadline and finish what they began: the slowest call
    // pauses for twice its lease, a waiter waits three.
    let grace = until + (lease * 8 + Duration::from_secs(10)).as_micros() as u64;
    for (_, process) in &mut slots {
        while !process.exited() && now_micros() < grace {
            std::thread::sleep(Duration::from_millis(50));
        }
        if !process.exited() {
            let at = now_micros();
            process.kill();
            log.push(FaultRecord {
                kind: "kill",
                process: process.name.clone(),
                start: at,
                end: at,
            });
        }
    }
    Ok(log)
}

/// What the store holds for `key` of run `run_id`.
async fn final_record(idem: &Idempotency, run_id: &str, key: &str) -> FinalRecord {
    let stored = idem
        .key("certify")
        .part(run_id)
        .part(key)
        .finish()
        .expect("the run's keys are valid");
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
