//! The report: JSON for machines, Markdown for people, SVG plots where a picture reads faster.

mod markdown;
mod svg;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::Serialize;

use crate::check::model::{CallRecord, FaultRecord, Run};
use crate::check::{Anomaly, Class, Findings};
use crate::history::Ending;

/// How many anomalies of each class the report shows in full.
const EXAMPLES_PER_CLASS: usize = 3;

/// The workload and faults a run used.
#[derive(Clone, Debug, Serialize)]
pub struct Setup {
    /// The store, as described by the target.
    pub store: String,
    /// The broken store wrapped around it, if any.
    pub broken: Option<String>,
    /// How long the workers called.
    pub seconds: u64,
    /// Worker processes (or in-process workers).
    pub workers: u32,
    /// The faults enabled.
    pub faults: Vec<String>,
    /// The lease of every call, in milliseconds.
    pub lease_ms: u64,
    /// The seed.
    pub seed: u64,
    /// Each worker process's clock offset, in milliseconds.
    pub clock_offsets_ms: Vec<(String, i64)>,
}

/// Everything the report says.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The run's setup.
    pub(crate) setup: Setup,
    /// Calls by how they ended.
    pub(crate) calls_by_outcome: BTreeMap<String, usize>,
    /// Faults injected, by kind.
    pub(crate) faults_by_kind: BTreeMap<String, usize>,
    /// Anomalies by class (every class, zero included).
    pub(crate) anomalies_by_class: BTreeMap<Class, usize>,
    /// The first few anomalies of each class, with the calls of their key.
    pub(crate) examples: Vec<Example>,
    /// False alarms: "not recorded" answers whose outcome the store holds.
    pub false_alarms: usize,
    /// Every false alarm, with the calls of its key and the faults around it.
    pub false_alarm_list: Vec<Alarm>,
    /// Bodies whose fencing token did not grow over an earlier body's of the same key.
    pub(crate) fencing_regressions: usize,
    /// The total of anomalies.
    pub(crate) anomalies: usize,
    /// Every fault injected, with its process and interval.
    pub(crate) fault_log: Vec<FaultRecord>,
    /// (start, end, outcome) of every call, for the plots.
    #[serde(skip)]
    pub(crate) timeline: Vec<(u64, u64, String)>,
}

/// An anomaly and the history of its key.
#[derive(Debug, Serialize)]
pub(crate) struct Example {
    /// The anomaly.
    pub(crate) anomaly: Anomaly,
    /// Every call of its key.
    pub(crate) history: Vec<CallRecord>,
}

/// A false alarm and what happened around it.
#[derive(Debug, Serialize)]
pub struct Alarm {
    /// The call answered "not recorded".
    pub call: CallRecord,
    /// Every call of its key that ran a body or got a first answer.
    pub(crate) history: Vec<CallRecord>,
    /// The faults that hit its process (or the store) while it ran.
    pub faults: Vec<FaultRecord>,
}

impl Report {
    /// The report of `run`, whose findings are `findings`.
    pub fn new(setup: Setup, run: &Run, findings: &Findings) -> Report {
        let mut calls_by_outcome = BTreeMap::new();
        let mut timeline = Vec::new();
        for call in run.calls.values() {
            let outcome = outcome_name(call);
            *calls_by_outcome.entry(outcome.clone()).or_default() += 1;
            timeline.push((call.invoked, call.ended_at().unwrap_or(run.ended), outcome));
        }
        let mut faults_by_kind = BTreeMap::new();
        for fault in &run.faults {
            *faults_by_kind.entry(fault.kind.to_owned()).or_default() += 1;
        }
        let by_key = run.by_key();
        let mut shown: BTreeMap<Class, usize> = BTreeMap::new();
        let mut examples = Vec::new();
        for anomaly in &findings.anomalies {
            let count = shown.entry(anomaly.class).or_default();
            if *count == EXAMPLES_PER_CLASS {
                continue;
            }
            *count += 1;
            // The calls that ran a body, got an answer or are named: not every duplicate
            // told "in progress".
            let history = by_key
                .get(anomaly.key.as_str())
                .map(|calls| {
                    calls
                        .iter()
                        .filter(|call| {
                            call.body.is_some()
                                || call.answer().is_some_and(|(_, replayed)| !replayed)
                                || anomaly.calls.contains(&call.id)
                        })
                        .map(|&call| call.clone())
                        .collect()
                })
                .unwrap_or_default();
            examples.push(Example {
                anomaly: anomaly.clone(),
                history,
            });
        }
        Report {
            setup,
            calls_by_outcome,
            faults_by_kind,
            anomalies_by_class: findings.counts(),
            examples,
            false_alarms: findings.false_alarms.len(),
            false_alarm_list: findings
                .false_alarms
                .iter()
                .filter_map(|alarm| Alarm::of(run, &by_key, &alarm.call))
                .collect(),
            fencing_regressions: findings.fencing_regressions.len(),
            anomalies: findings.anomalies.len(),
            fault_log: run.faults.clone(),
            timeline,
        }
    }

    /// Writes `report.json`, `report.md`, `calls.svg` and `latency.svg` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        let write = |name: &str, text: String| {
            let path = dir.join(name);
            fs::write(&path, text).map_err(|error| format!("writing {}: {error}", path.display()))
        };
        write(
            "report.json",
            serde_json::to_string_pretty(self).expect("reports serialise"),
        )?;
        write("report.md", markdown::render(self))?;
        write("calls.svg", svg::calls_over_time(self))?;
        write("latency.svg", svg::latency_by_outcome(self))
    }

    /// The summary printed at the end of a run, its last line `anomalies: N`.
    pub(crate) fn summary(&self) -> String {
        let mut text = format!(
            "store: {}{}\ncalls: {}\n",
            self.setup.store,
            self.setup
                .broken
                .as_ref()
                .map(|broken| format!(" (broken: {broken})"))
                .unwrap_or_default(),
            self.calls_by_outcome
                .iter()
                .map(|(outcome, count)| format!("{outcome} {count}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let faults: Vec<String> = self
            .faults_by_kind
            .iter()
            .map(|(kind, count)| format!("{kind} {count}"))
            .collect();
        text += &format!(
            "faults: {}\n",
            if faults.is_empty() {
                "none".to_owned()
            } else {
                faults.join(", ")
            }
        );
        for (class, count) in &self.anomalies_by_class {
            if *count > 0 {
                text += &format!("  {class:?}: {count} ({})\n", class.meaning());
            }
        }
        text += &format!("false alarms: {}\n", self.false_alarms);
        text += &format!("fencing regressions: {}\n", self.fencing_regressions);
        text += &format!("anomalies: {}\n", self.anomalies);
        text
    }
}

/// A call's outcome as the report counts it.
pub(crate) fn outcome_name(call: &CallRecord) -> String {
    match &call.ending {
        None => "unfinished".to_owned(),
        Some((
            Ending::Ok {
                replayed: false, ..
            },
            _,
        )) => "ok".to_owned(),
        Some((Ending::Ok { replayed: true, .. }, _)) => "ok replayed".to_owned(),
        Some((
            Ending::StoredErr {
                replayed: false, ..
            },
            _,
        )) => "stored error".to_owned(),
        Some((Ending::StoredErr { replayed: true, .. }, _)) => "stored error replayed".to_owned(),
        Some((Ending::Error { class, .. }, _)) => class.clone(),
        Some((Ending::Abandoned, _)) => "abandoned".to_owned(),
    }
}

impl Alarm {
    /// The false alarm of call `id`, if the run has it.
    fn of(run: &Run, by_key: &BTreeMap<&str, Vec<&CallRecord>>, id: &str) -> Option<Alarm> {
        let call = run.calls.get(id)?;
        let ended = call.ended_at().unwrap_or(run.ended);
        let history = by_key
            .get(call.key.as_str())
            .map(|calls| {
                calls
                    .iter()
                    .filter(|other| {
                        other.id == call.id
                            || other.body.is_some()
                            || other.answer().is_some_and(|(_, replayed)| !replayed)
                    })
                    .map(|&other| other.clone())
                    .collect()
            })
            .unwrap_or_default();
        let faults = run
            .faults
            .iter()
            .filter(|fault| fault.process == call.process || fault.process == "*")
            .filter(|fault| fault.start <= ended && fault.end.max(fault.start) >= call.invoked)
            .cloned()
            .collect();
        Some(Alarm {
            call: call.clone(),
            history,
            faults,
        })
    }
}
