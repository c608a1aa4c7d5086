//! The command, run as a person would: a clean store passes, broken ones are caught by class.

mod front;

use std::path::Path;
use std::process::Command;

use crate::support::command::{out_dir, redis_installed};

/// Runs `idem-certify` on memory for a few seconds with `extra` arguments; its exit code, its
/// output, and the report it wrote.
fn certify(extra: &[&str], out: &Path) -> (i32, String, serde_json::Value) {
    let output = Command::new(env!("CARGO_BIN_EXE_idem-certify"))
        .args([
            "--store",
            "memory",
            "--seconds",
            "5",
            "--seed",
            "7",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .output()
        .expect("idem-certify runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let report = std::fs::read_to_string(out.join("report.json"))
        .unwrap_or_else(|error| panic!("no report ({error}): {stdout}"));
    (
        output.status.code().unwrap_or(-1),
        stdout,
        serde_json::from_str(&report).expect("the report is JSON"),
    )
}

#[test]
fn a_correct_store_has_no_anomaly() {
    let out = out_dir("clean");
    let (code, stdout, report) = certify(&[], &out);
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(stdout.lines().last(), Some("anomalies: 0"), "{stdout}");
    assert!(report["calls_by_outcome"]["ok"].as_u64().unwrap_or(0) > 0);
    for file in ["report.md", "calls.svg", "latency.svg"] {
        assert!(out.join(file).exists(), "{file}");
    }
}

#[test]
fn broken_stores_are_caught_by_the_class_they_break() {
    let stores = [
        ("ReserveAlwaysGrants", "concurrent_bodies"),
        ("FingerprintIgnored", "answer_for_other_arguments"),
        ("RenewDoesNotExtend", "concurrent_bodies"),
        ("TakeoverOneSecondEarly", "concurrent_bodies"),
    ];
    // Side by side: each run takes its seconds whatever else runs.
    let runs: Vec<_> = std::thread::scope(|scope| {
        let running: Vec<_> = stores
            .iter()
            .map(|&(broken, _)| {
                scope.spawn(move || certify(&["--broken", broken], &out_dir(broken)))
            })
            .collect();
        running
            .into_iter()
            .map(|run| run.join().expect("the run's thread"))
            .collect()
    });
    for ((broken, class), (code, stdout, report)) in stores.into_iter().zip(runs) {
        assert_eq!(code, 1, "{broken}: {stdout}");
        let found = report["anomalies_by_class"][class].as_u64().unwrap_or(0);
        assert!(found > 0, "{broken}: no {class} in {stdout}");
        assert!(
            !stdout.ends_with("anomalies: 0\n"),
            "{broken}: the summary says none: {stdout}"
        );
    }
}

#[test]
fn a_broken_store_name_the_kit_does_not_have_is_refused_with_the_list() {
    let output = Command::new(env!("CARGO_BIN_EXE_idem-certify"))
        .args(["--store", "memory", "--broken", "AlwaysRight"])
        .output()
        .expect("idem-certify runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ReserveAlwaysGrants"), "{stderr}");
}

#[test]
fn workers_that_cannot_reach_the_store_fail_the_run_instead_of_passing_it() {
    let out = out_dir("unreachable");
    let output = Command::new(env!("CARGO_BIN_EXE_idem-certify"))
        .args(["--store", "redis", "--url", "redis://127.0.0.1:1/"])
        .args(["--faults", "none", "--seconds", "2", "--out"])
        .arg(&out)
        .output()
        .expect("idem-certify runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("worker w0.1 failed"), "{stderr}");
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains("anomalies: 0"),
        "no verdict without calls"
    );
}

/// A Redis Cluster with a replica per primary, whose primaries fail over and whose replicas
/// are lost while workers call: both faults happen, and nothing is lost or misreported. A
/// write its lost replica never confirmed was applied all the same: the engine finds it
/// before saying "not recorded", or every such call would be a false alarm.
#[test]
fn a_cluster_rides_out_failovers_and_lost_replicas() {
    if !redis_installed("the cluster's run") {
        return;
    }
    let out = out_dir("cluster-failover");
    let output = Command::new(env!("CARGO_BIN_EXE_idem-certify"))
        .args(["--store", "redis-cluster", "--seconds", "25", "--seed", "8"])
        .args(["--faults", "failover,replica-loss", "--out"])
        .arg(&out)
        .output()
        .expect("idem-certify runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    for kind in ["failover", "replica-loss"] {
        let injected = report["faults_by_kind"][kind].as_u64().unwrap_or(0);
        assert!(injected > 0, "no {kind} in {stdout}");
    }
    assert_eq!(report["false_alarms"].as_u64(), Some(0), "{stdout}");
    assert!(report["calls_by_outcome"]["ok"].as_u64().unwrap_or(0) > 0);
}
