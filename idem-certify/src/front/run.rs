//! A front-end run: the store started, the downstream service and the servers started,
//! callers sending requests while faults are injected, then the histories read, checked and
//! reported.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::args::{FaultKind, FrontKind, RunArgs, StoreKind};
use crate::check::front::check_front;
use crate::check::front::model::{is_request, FrontRun};
use crate::check::model::Run;
use crate::front::callers::{self, Calling};
use crate::front::endpoint::Shape;
use crate::front::fleet::{Fleet, Setting};
use crate::front::lines::{self, JsonLines};
use crate::front::plan::{ServerPlan, Serves};
use crate::front::process::ServerProcess;
use crate::front::runtime_api::Emulator;
use crate::history::{self, now_micros};
use crate::out_dir;
use crate::proxies::Proxy;
use crate::report::{Report, Setup};
use crate::run::Outcome;
use crate::servers::Target;

/// The faults a front-end run injects when `--faults` names none.
const DEFAULT_FAULTS: [FaultKind; 3] = [FaultKind::Kill, FaultKind::Stop, FaultKind::Net];

/// Runs `args` on the front end `front`.
pub(crate) async fn run(args: &RunArgs, front: FrontKind) -> Result<Outcome, String> {
    let kind = args
        .store
        .ok_or("pass --store redis|redis-cluster|postgres|dynamodb")?;
    if kind == StoreKind::Memory {
        return Err(
            "a front-end run's servers are processes of their own: they need a store \
                    with a server (redis, postgres), not memory"
                .to_owned(),
        );
    }
    if args.broken.is_some() {
        return Err("--broken wraps the engine's store; a front-end run takes none".to_owned());
    }
    let restartable = Target::can_restart(kind, args.url.as_deref());
    let faults = faults_of(args, restartable)?;
    let restarts = faults.contains(&FaultKind::Restart);
    let mut target = Target::start(kind, args.url.as_deref(), restarts, false).await?;
    let spec = target
        .spec
        .clone()
        .ok_or("a store with a server has an address")?;
    let net = faults.contains(&FaultKind::Net);
    if net && !crate::nemesis::proxiable(Some(&spec)) {
        return Err("net faults need a store behind one address: not a cluster".to_owned());
    }
    let seed = args.seed.unwrap_or_else(now_micros);
    let name = format!(
        "{kind:?}-{front:?}{}",
        if args.downstream { "-downstream" } else { "" }
    );
    let dir = args.out.clone().unwrap_or_else(|| {
        Path::new("target/certify").join(format!("{name}-{}", seed % 1_000_000))
    });
    out_dir::fresh(&dir, &["histories", "contexts", "served"])?;
    out_dir::without_files(&dir, &["callers.jsonl", "downstream.jsonl"])?;
    let lease = Duration::from_millis(args.lease_ms);
    let (_downstream, mut downstream_proxy) = match args.downstream {
        true => {
            let (process, proxy) = downstream(&dir, lease, net).await?;
            (Some(process), proxy)
        }
        false => (None, None),
    };
    let downstream_url = match (&_downstream, &downstream_proxy) {
        (_, Some(proxy)) => Some(format!("http://{}", proxy.listen)),
        (Some(process), None) => Some(format!("http://{}", process.server.address)),
        (None, None) => None,
    };
    let lambda = match front {
        FrontKind::Lambda => Some(tokio::task::block_in_place(Emulator::start)?),
        _ => None,
    };
    let setting = Setting {
        front,
        store: spec,
        downstream: downstream_url,
        dir: dir.clone(),
        lease,
        proxied: net,
        lambda,
    };
    let mut fleet = Fleet::start(setting, args.workers.max(1)).await?;
    let began = now_micros();
    let until = began + args.seconds * 1_000_000;
    let calling = Arc::new(Calling {
        run: format!("run{seed}"),
        span: (began, until),
        urls: fleet.urls.clone(),
        history: JsonLines::create(&dir.join("callers.jsonl"))?,
        shapes: shapes(front, args.downstream),
        client: callers::client(lease)?,
    });
    let callers: Vec<_> = (0..args.callers)
        .map(|caller| {
            let seed = seed.wrapping_mul(31).wrapping_add(u64::from(caller));
            tokio::spawn(callers::call(calling.clone(), caller, seed))
        })
        .collect();
    let mut rng = fastrand::Rng::with_seed(seed);
    let injected = fleet
        .nemesis(
            &mut target,
            &faults,
            downstream_proxy.as_mut(),
            until,
            &mut rng,
        )
        .await;
    for caller in callers {
        caller
            .await
            .map_err(|error| format!("a caller failed: {error}"))?;
    }
    injected?;
    fleet.stop()?;
    let front_run = read(&dir, &fleet, args)?;
    let findings = check_front(&front_run);
    let setup = Setup {
        store: format!(
            "{} behind {front:?}{}",
            target.described,
            if args.downstream {
                ", charging downstream"
            } else {
                ""
            }
        ),
        broken: None,
        seconds: args.seconds,
        workers: args.workers,
        faults: faults.iter().map(|fault| fault.name()).collect(),
        lease_ms: args.lease_ms,
        seed,
        clock_offsets_ms: Vec::new(),
    };
    let report = Report::new(setup, &front_run.run, &findings);
    report.write(&dir)?;
    // The report's calls are the requests (their answers) and the executions (the errors
    // they ended in; `unfinished` for those that answered) side by side: told apart here.
    eprintln!("{}", counts(&front_run));
    Ok(Outcome { report, dir })
}

/// The shapes a front end's requests take, by key. A service error after the handler began
/// is sent where the framework has one that reaches the layer as a failure, not an answer:
/// actix-web's middleware `Err`, poem's `poem::Error`, salvo's 5xx `StatusError` and the Lambda
/// function's error. Behind tower (axum) it could only be an answer, a 503 that releases the
/// key: not sent there. With a downstream, no slow shape: the executions in flight when a
/// server is killed or stopped are then mostly in their charge, which is what a takeover must
/// not repeat.
fn shapes(front: FrontKind, downstream: bool) -> &'static [Shape] {
    match (front, downstream) {
        (FrontKind::Tower, false) => &[Shape::Plain, Shape::Plain, Shape::Slow],
        (FrontKind::Tower, true) => &[Shape::Plain],
        (_, false) => &[Shape::Plain, Shape::Slow, Shape::ServiceError],
        (_, true) => &[Shape::Plain, Shape::Plain, Shape::ServiceError],
    }
}

/// How many requests were answered, replayed and left unanswered, how many executions ran,
/// and how many charges the downstream made.
fn counts(front: &FrontRun) -> String {
    let (mut answered, mut replayed, mut requests, mut executions) = (0, 0, 0, 0);
    for call in front.run.calls.values() {
        if !is_request(call) {
            executions += 1;
            continue;
        }
        requests += 1;
        match call.answer() {
            Some((_, true)) => replayed += 1,
            Some((_, false)) => answered += 1,
            None => {}
        }
    }
    let charges: usize = front.charges.values().map(Vec::len).sum();
    let contexts = front.contexts.len();
    format!(
        "requests: {requests} sent, {answered} answered by an execution, {replayed} replayed; \
         executions: {executions} ({contexts} in a call context); downstream charges: {charges}"
    )
}

/// The faults to inject: kill, stop, net and restart are the ones a front-end run knows.
fn faults_of(args: &RunArgs, restartable: bool) -> Result<Vec<FaultKind>, String> {
    let faults: Vec<FaultKind> = match args.named_faults() {
        Some(faults) => faults,
        None => {
            let mut faults = DEFAULT_FAULTS.to_vec();
            if restartable {
                faults.push(FaultKind::Restart);
            }
            faults
        }
    };
    if let Some(fault) = faults.iter().find(|fault| {
        !matches!(
            fault,
            FaultKind::Kill | FaultKind::Stop | FaultKind::Net | FaultKind::Restart
        )
    }) {
        return Err(format!(
            "a front-end run injects kill, stop, net and restart, not {}",
            fault.name()
        ));
    }
    if faults.contains(&FaultKind::Restart) && !restartable {
        return Err("restart needs a Redis or PostgreSQL server this run starts".to_owned());
    }
    Ok(faults)
}

/// Starts the downstream service, and the proxy the servers reach it through with net faults.
async fn downstream(
    dir: &Path,
    lease: Duration,
    net: bool,
) -> Result<(ServerProcess, Option<Proxy>), String> {
    let plan = ServerPlan {
        name: "downstream".to_owned(),
        serves: Serves::Downstream,
        history: dir.join("downstream.jsonl"),
        lease_ms: lease.as_millis() as u64,
    };
    let log = dir.join("downstream.log");
    let process = tokio::task::block_in_place(|| ServerProcess::start(&plan, &log))?;
    let proxy = match net {
        true => Some(Proxy::start("downstream", &process.server.address).await?),
        false => None,
    };
    Ok((process, proxy))
}

/// The run's histories: the servers', the callers' and the downstream's.
fn read(dir: &Path, fleet: &Fleet, args: &RunArgs) -> Result<FrontRun, String> {
    let mut front = FrontRun {
        run: Run {
            faults: fleet.log.clone(),
            ended: now_micros(),
            told_within: 50_000,
            lease: args.lease_ms * 1_000,
            ..Run::default()
        },
        scoped_by_principal: fleet.scoped_by_principal(),
        ..FrontRun::default()
    };
    for (process, events) in history::read_all(&dir.join("histories"))? {
        front.run.add_history(&process, events);
    }
    for entry in fs::read_dir(dir.join("contexts")).map_err(|error| error.to_string())? {
        let path = entry.map_err(|error| error.to_string())?.path();
        front.add_contexts(lines::read(&path)?);
    }
    for entry in fs::read_dir(dir.join("served")).map_err(|error| error.to_string())? {
        let path = entry.map_err(|error| error.to_string())?.path();
        front.add_served(lines::read(&path)?);
    }
    front.add_callers(lines::read(&dir.join("callers.jsonl"))?);
    if args.downstream {
        front.add_charges(lines::read(&dir.join("downstream.jsonl"))?);
    }
    if !front.run.calls.values().any(|call| call.answer().is_some()) {
        return Err(format!(
            "no request was answered: see the servers' logs in {}",
            dir.display()
        ));
    }
    Ok(front)
}
