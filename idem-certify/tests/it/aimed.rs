//! Aimed faults: retries aimed at the keys other callers hold through a long pause, listed on
//! the run's board, and stops aimed at a key's owner (a slow body, a step waiting for its
//! answer) that last until its key is taken over.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::command::{out_dir, redis_installed};

fn certify(args: &[&str], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_idem-certify"))
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("idem-certify runs")
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn retries_aimed_at_stalled_keys_take_them_over_and_every_pause_is_unlisted_at_the_end() {
    let out = out_dir("memory");
    let output = certify(
        &["--store", "memory", "--seconds", "5", "--seed", "11"],
        &out,
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let board = out.join("board");
    let taken = names_in(&board.join("taken"));
    assert!(!taken.is_empty(), "no key was taken over: {stdout}");
    let lists: Vec<String> = names_in(&board)
        .into_iter()
        .filter(|name| name.ends_with(".json"))
        .collect();
    assert_eq!(lists, ["w0.1.json", "w1.1.json", "w2.1.json", "w3.1.json"]);
    for list in lists {
        let listed = std::fs::read_to_string(board.join(&list)).unwrap();
        assert_eq!(listed, "[]", "{list} still lists a pause");
    }
}

#[test]
fn stops_aimed_at_a_keys_owner_last_until_the_key_is_taken_over() {
    if !redis_installed("the aimed stops") {
        return;
    }
    let out = out_dir("redis-stops");
    let output = certify(
        &[
            "--store",
            "redis",
            "--seconds",
            "10",
            "--seed",
            "12",
            "--faults",
            "stop",
        ],
        &out,
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    let aimed: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("aimed stop: "))
        .collect();
    assert!(
        aimed
            .iter()
            .any(|line| line.contains(", taken over after ")),
        "no aimed stop saw its key taken over: {stderr}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let stops = report["faults_by_kind"]["stop"].as_u64().unwrap_or(0);
    assert!(stops >= aimed.len() as u64, "{stdout}{stderr}");
}
