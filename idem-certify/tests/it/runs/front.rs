//! The front-end runs, as a person would start them: each front end (tower, actix-web, poem,
//! salvo and a `lambda_http` function), on Redis, with its servers killed and stopped (each
//! at least once: the nemesis takes the kinds in turn, and eight seconds leave room for
//! both), answers every principal's keys correctly, and every front end but tower (where a
//! service error could only be an answer) has handlers whose service failed after they
//! began. The network faults and the store's restarts are left to the longer runs
//! (`scripts/certify-planted.sh`).

use std::process::Command;

use crate::support::command::{out_dir, redis_installed};

/// Runs `idem-certify --front FRONT` on Redis for eight seconds, its servers killed and
/// stopped; its exit code, its output and the report it wrote. `None` when there is no
/// redis-server and none is required.
fn certify_front(front: &str) -> Option<(i32, String, serde_json::Value)> {
    if !redis_installed(&format!("the {front} run")) {
        return None;
    }
    let out = out_dir(&format!("front-{front}"));
    leave_an_earlier_runs_callers(&out);
    let output = Command::new(env!("CARGO_BIN_EXE_idem-certify"))
        .args(["--store", "redis", "--front", front, "--seconds", "8"])
        .args(["--faults", "kill,stop"])
        .args(["--workers", "2", "--callers", "4", "--seed", "7", "--out"])
        .arg(&out)
        .output()
        .expect("idem-certify runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let report = std::fs::read_to_string(out.join("report.json"))
        .unwrap_or_else(|error| panic!("no report ({error}): {stdout}{stderr}"));
    Some((
        output.status.code().unwrap_or(-1),
        stdout,
        serde_json::from_str(&report).expect("the report is JSON"),
    ))
}

/// Leaves in `out` the callers' history of an earlier run, whose request was refused with a
/// 422 (a refusal the workload never provokes): read as this run's, it would be an anomaly.
fn leave_an_earlier_runs_callers(out: &std::path::Path) {
    std::fs::create_dir_all(out).expect("the output directory");
    let earlier = [
        r#"{"event":"send","call":"c99.0","principal":"alice","key":"earlier-k0","payload":"earlier-k0:plain","server":"http://127.0.0.1:1","t":1}"#,
        r#"{"event":"answer","call":"c99.0","status":422,"body":"","replayed":false,"t":2}"#,
    ];
    std::fs::write(out.join("callers.jsonl"), earlier.join("\n") + "\n")
        .expect("an earlier run's history");
}

/// Whether a front end's run sends requests whose service fails after the handler began.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ServiceErrors {
    Sent,
    NotSent,
}

fn a_front_end_answers_every_principal_once(front: &str, service_errors: ServiceErrors) {
    let Some((code, stdout, report)) = certify_front(front) else {
        return;
    };
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(stdout.lines().last(), Some("anomalies: 0"), "{stdout}");
    let outcomes = &report["calls_by_outcome"];
    assert!(outcomes["ok"].as_u64().unwrap_or(0) > 0, "{stdout}");
    assert!(
        outcomes["ok replayed"].as_u64().unwrap_or(0) > 0,
        "{stdout}"
    );
    let failed = outcomes["ServiceError"].as_u64().unwrap_or(0);
    match service_errors {
        ServiceErrors::Sent => assert!(failed > 0, "no service error: {outcomes}; {stdout}"),
        ServiceErrors::NotSent => assert_eq!(failed, 0, "{outcomes}; {stdout}"),
    }
    let faults = report["faults_by_kind"]
        .as_object()
        .expect("faults by kind");
    for kind in ["kill", "stop"] {
        let injected = faults.get(kind).and_then(|count| count.as_u64());
        assert!(injected >= Some(1), "no {kind}: {faults:?}; {stdout}");
    }
}

#[test]
fn the_tower_layer_under_faults_has_no_anomaly() {
    a_front_end_answers_every_principal_once("tower", ServiceErrors::NotSent);
}

#[test]
fn the_actix_middleware_under_faults_has_no_anomaly() {
    a_front_end_answers_every_principal_once("actix", ServiceErrors::Sent);
}

#[test]
fn the_poem_middleware_under_faults_has_no_anomaly() {
    a_front_end_answers_every_principal_once("poem", ServiceErrors::Sent);
}

#[test]
fn the_salvo_hoop_under_faults_has_no_anomaly() {
    a_front_end_answers_every_principal_once("salvo", ServiceErrors::Sent);
}

/// The function processes poll cargo-lambda's Runtime API, which the run starts: without it
/// (and backends not required) the run is left out, as the framework tests leave it.
#[test]
fn the_lambda_function_under_faults_has_no_anomaly() {
    if !idem_test_servers::lambda::installed() {
        return;
    }
    a_front_end_answers_every_principal_once("lambda", ServiceErrors::Sent);
}
