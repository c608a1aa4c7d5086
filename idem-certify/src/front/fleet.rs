//! The server slots of a front-end run, each with its current process and the proxies its
//! callers and its store connections go through, and the faults injected into them until the
//! deadline: servers killed (and started again, so that there is always one to reach) and
//! stopped past the lease, network faults between the callers and a server, between a server
//! and the store, and between the servers and the downstream service, and the store's server
//! restarted.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::args::{FaultKind, FrontKind};
use crate::check::model::FaultRecord;
use crate::front::plan::{ServerPlan, Serves};
use crate::front::process::ServerProcess;
use crate::front::runtime_api::Emulator;
use crate::history::now_micros;
use crate::nemesis::{proxied, proxy_for};
use crate::plan::StoreSpec;
use crate::proxies::{NetFault, Proxy};
use crate::servers::Target;

/// The URL of each slot's current server, as callers reach it.
pub(crate) type Urls = Arc<Mutex<Vec<String>>>;

/// What every server of the run shares.
pub(crate) struct Setting {
    /// The front end.
    pub(crate) front: FrontKind,
    /// The store.
    pub(crate) store: StoreSpec,
    /// The downstream service, as the servers reach it.
    pub(crate) downstream: Option<String>,
    /// The run's directory: `histories/` and the servers' logs.
    pub(crate) dir: PathBuf,
    /// The layer's lease.
    pub(crate) lease: Duration,
    /// Whether callers and stores are reached through proxies, for network faults.
    pub(crate) proxied: bool,
    /// The Lambda Runtime API the servers poll, when they are Lambda functions.
    pub(crate) lambda: Option<Emulator>,
}

struct Slot {
    incarnation: u32,
    process: ServerProcess,
    store_proxy: Option<Proxy>,
    caller_proxy: Option<Proxy>,
}

/// The server slots.
pub(crate) struct Fleet {
    setting: Setting,
    slots: Vec<Slot>,
    /// The URL of each slot's server.
    pub(crate) urls: Urls,
    /// The faults injected so far.
    pub(crate) log: Vec<FaultRecord>,
}

impl Fleet {
    /// Starts `count` servers.
    pub(crate) async fn start(setting: Setting, count: u32) -> Result<Fleet, String> {
        let mut fleet = Fleet {
            setting,
            slots: Vec::new(),
            urls: Urls::default(),
            log: Vec::new(),
        };
        for index in 0..count {
            let store_proxy = match fleet.setting.proxied {
                true => Some(proxy_for(&fleet.setting.store, index).await?),
                false => None,
            };
            let (process, caller_proxy) = fleet.serve(index, 1, store_proxy.as_ref()).await?;
            fleet
                .urls
                .lock()
                .unwrap()
                .push(fleet.url(&process, caller_proxy.as_ref()));
            fleet.slots.push(Slot {
                incarnation: 1,
                process,
                store_proxy,
                caller_proxy,
            });
        }
        Ok(fleet)
    }

    /// Starts incarnation `incarnation` of slot `index`, and its callers' proxy.
    async fn serve(
        &self,
        index: u32,
        incarnation: u32,
        store_proxy: Option<&Proxy>,
    ) -> Result<(ServerProcess, Option<Proxy>), String> {
        let setting = &self.setting;
        let name = format!("s{index}.{incarnation}");
        let store = match store_proxy {
            Some(proxy) => proxied(setting.store.clone(), &proxy.listen),
            None => setting.store.clone(),
        };
        let runtime_api = setting.lambda.as_ref().map(Emulator::runtime_api);
        let plan = ServerPlan {
            history: setting.dir.join("histories").join(format!("{name}.jsonl")),
            name: name.clone(),
            serves: Serves::Endpoint {
                front: setting.front,
                store,
                downstream: setting.downstream.clone(),
                contexts: setting.dir.join("contexts").join(format!("{name}.jsonl")),
                served: setting.dir.join("served").join(format!("{name}.jsonl")),
                runtime_api,
            },
            lease_ms: setting.lease.as_millis() as u64,
        };
        let log = setting.dir.join(format!("{name}.log"));
        let process = tokio::task::block_in_place(|| ServerProcess::start(&plan, &log))?;
        // A Lambda function's callers reach it through the emulator's function URL: its slot's
        // proxy stands in front of the emulator, the callers' way in that their network faults
        // cut (the function process's own link to the Runtime API is never faulted: Lambda's
        // is local, and `lambda_runtime` gives up a worker whose link fails).
        let proxy = match (setting.proxied, &setting.lambda) {
            (true, Some(emulator)) => Some(Proxy::start(&name, emulator.host_port()).await?),
            (true, None) => Some(Proxy::start(&name, &process.server.address).await?),
            (false, _) => None,
        };
        Ok((process, proxy))
    }

    /// The URL callers reach `process` at: its own address (or its proxy's), or, for a Lambda
    /// function, the function URL (through the slot's proxy), which reaches whichever
    /// function process polls first.
    fn url(&self, process: &ServerProcess, proxy: Option<&Proxy>) -> String {
        if let Some(emulator) = &self.setting.lambda {
            return emulator.function_url(proxy.map(|proxy| proxy.listen.as_str()));
        }
        format!(
            "http://{}",
            proxy.map_or(process.server.address.as_str(), |proxy| proxy
                .listen
                .as_str())
        )
    }

    /// Injects `faults` until `until` (microseconds since the epoch), a fault every half to
    /// one and a half seconds, each kind in turn from one picked at random (so that a short
    /// run has each kind once before any twice); `downstream` is the proxy in front of the
    /// downstream service.
    pub(crate) async fn nemesis(
        &mut self,
        target: &mut Target,
        faults: &[FaultKind],
        downstream: Option<&mut Proxy>,
        until: u64,
        rng: &mut fastrand::Rng,
    ) -> Result<(), String> {
        let mut downstream = downstream;
        let lease = self.setting.lease;
        let lease_ms = lease.as_millis() as u64;
        let first = rng.usize(..faults.len().max(1));
        let mut turn = 0;
        while !faults.is_empty() {
            let pause = Duration::from_millis(rng.u64(500..1_500));
            if now_micros() + (pause + lease * 2).as_micros() as u64 > until {
                break;
            }
            tokio::time::sleep(pause).await;
            let index = rng.usize(..self.slots.len());
            let at = now_micros();
            let name = self.slots[index].process.name.clone();
            let record = |kind: &'static str, process: &str| FaultRecord {
                kind,
                process: process.to_owned(),
                start: at,
                end: now_micros(),
            };
            let kind = faults[(first + turn) % faults.len()];
            turn += 1;
            match kind {
                FaultKind::Kill => {
                    self.slots[index].process.server.kill();
                    self.log.push(record("kill", &name));
                    self.restart_slot(index).await?;
                }
                FaultKind::Stop => {
                    let slot = &self.slots[index];
                    slot.process.server.stop()?;
                    let paused = lease * 3 / 2 + Duration::from_millis(rng.u64(..1_000));
                    tokio::time::sleep(paused).await;
                    slot.process.server.resume()?;
                    self.log.push(record("stop", &name));
                }
                FaultKind::Net => {
                    let fault = NetFault::ALL[rng.usize(..NetFault::ALL.len())];
                    let slot = &mut self.slots[index];
                    // The store's side excuses the server (its renewals may fail); the
                    // callers' and the downstream's sides excuse nothing.
                    let (proxy, process) = match (rng.u8(..3), downstream.as_deref_mut()) {
                        (0, _) => (slot.store_proxy.as_mut(), name.clone()),
                        (1, Some(proxy)) => (Some(proxy), format!("{name}>downstream")),
                        _ => (slot.caller_proxy.as_mut(), format!("callers>{name}")),
                    };
                    let proxy = proxy.expect("net faults come with proxies");
                    proxy.inject(fault, lease_ms, rng).await;
                    tokio::time::sleep(lease + Duration::from_millis(rng.u64(..lease_ms))).await;
                    proxy.heal(fault).await?;
                    self.log.push(record(fault.name(), &process));
                }
                FaultKind::Restart => {
                    tokio::task::block_in_place(|| target.restart())?;
                    self.log.push(record("restart", "*"));
                }
                _ => {}
            }
            self.check_alive()?;
        }
        Ok(())
    }

    /// Kills slot `index`'s server if it still runs and starts its next incarnation.
    async fn restart_slot(&mut self, index: usize) -> Result<(), String> {
        let incarnation = self.slots[index].incarnation + 1;
        let store_proxy = self.slots[index].store_proxy.take();
        let started = self
            .serve(index as u32, incarnation, store_proxy.as_ref())
            .await;
        self.slots[index].store_proxy = store_proxy;
        let (process, caller_proxy) = started?;
        self.urls.lock().unwrap()[index] = self.url(&process, caller_proxy.as_ref());
        let slot = &mut self.slots[index];
        slot.incarnation = incarnation;
        slot.process = process;
        slot.caller_proxy = caller_proxy;
        Ok(())
    }

    /// Whether the servers scope keys by the request context's principal: Lambda functions.
    pub(crate) fn scoped_by_principal(&self) -> bool {
        self.setting.lambda.is_some()
    }

    /// Fails when a server, or the Lambda Runtime API the servers poll, exited on its own:
    /// they serve until killed.
    fn check_alive(&mut self) -> Result<(), String> {
        if let Some(why) = self.setting.lambda.as_mut().and_then(Emulator::exited) {
            return Err(why);
        }
        for slot in &mut self.slots {
            if let Some(status) = slot.process.server.exited() {
                return Err(format!(
                    "server {} exited ({status}): see {}",
                    slot.process.name,
                    log_of(&self.setting.dir, &slot.process.name).display()
                ));
            }
        }
        Ok(())
    }

    /// Kills every server, once the callers are done.
    pub(crate) fn stop(&mut self) -> Result<(), String> {
        self.check_alive()?;
        for slot in &mut self.slots {
            slot.process.server.kill();
        }
        Ok(())
    }
}

fn log_of(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.log"))
}
