//! A worker process: connects to the store its plan names and runs the workload.

use std::sync::Arc;

use idem_core::Idempotency;

use crate::clock::OffsetClock;
use crate::connect::{connect, wrap};
use crate::history::HistoryWriter;
use crate::plan::WorkerPlan;
use crate::workload::board::Board;
use crate::workload::Worker;

/// Runs the worker `plan` describes (as JSON) to its deadline.
pub(crate) fn main(plan: &str) -> Result<(), String> {
    let plan: WorkerPlan =
        serde_json::from_str(plan).map_err(|error| format!("reading the plan: {error}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| format!("starting the runtime: {error}"))?;
    runtime.block_on(async {
        let spec = plan
            .store
            .clone()
            .ok_or("a worker process needs a store to connect to")?;
        let store = wrap(connect(&spec).await?, plan.broken.as_deref())?;
        let history = HistoryWriter::create(&plan.history)
            .map_err(|error| format!("opening {}: {error}", plan.history.display()))?;
        let idem = Idempotency::from_arc(store).with_clock(OffsetClock {
            offset_ms: plan.clock_offset_ms,
        });
        run_all(plan, idem, Arc::new(history)).await;
        Ok(())
    })
}

/// How many calls a worker keeps in flight at once.
pub(crate) const CONCURRENT_CALLS: u64 = 4;

/// Runs `CONCURRENT_CALLS` callers of `plan` on `idem`, each a [`Worker`] of its own seed.
pub(crate) async fn run_all(plan: WorkerPlan, idem: Idempotency, history: Arc<HistoryWriter>) {
    let board = Arc::new(Board::beside(&plan.history, &plan.name));
    let callers: Vec<_> = (0..CONCURRENT_CALLS)
        .map(|lane| {
            let mut plan = plan.clone();
            plan.name = format!("{}.{lane}", plan.name);
            plan.seed = plan.seed.wrapping_mul(31).wrapping_add(lane);
            let worker = Worker::new(plan, idem.clone(), history.clone(), board.clone());
            tokio::spawn(worker.run())
        })
        .collect();
    for caller in callers {
        // A caller that panicked has written its history up to the panic; the checker reads it.
        let _ = caller.await;
    }
}
