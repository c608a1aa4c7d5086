//! Each rule the crates share has one home, idem-protocol (or idem-core, for the engine's
//! own), and the other crates call it. These tests read the crates' sources and fail when a
//! second definition appears beside the home: a header name or problem type spelt out again,
//! a log target of a crate's own, a digest of credentials computed elsewhere.

use std::fs;
use std::path::PathBuf;

use super::sources::{rust_files, workspace};

/// Every `.rs` file under each crate's `src/`, but the crates named in `except`.
fn sources(except: &[&str]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(workspace()).unwrap() {
        let crate_dir = entry.unwrap().path();
        let name = crate_dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !name.starts_with("idem-") || except.contains(&name.as_str()) {
            continue;
        }
        files.extend(rust_files(&crate_dir.join("src")));
    }
    assert!(files.len() > 50, "the crates' sources were found");
    files
}

/// The lines of code (not comments) in `files` that contain `needle`, as `path:line: text`.
fn code_lines_with(files: &[PathBuf], needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for path in files {
        let text = fs::read_to_string(path).unwrap();
        for (number, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if code.contains(needle) {
                found.push(format!("{}:{}: {}", path.display(), number + 1, code));
            }
        }
    }
    found
}

#[test]
fn header_names_and_problem_types_are_spelt_only_in_idem_protocol() {
    let files = sources(&["idem-protocol"]);
    for needle in [
        "\"idempotency-key\"",
        "\"idempotent-replayed\"",
        "\"application/problem+json\"",
        "docs.rs/idem-http",
    ] {
        let found = code_lines_with(&files, needle);
        assert!(
            found.is_empty(),
            "{needle} outside idem-protocol: use idem_protocol::header or ::problem\n{}",
            found.join("\n")
        );
    }
}

#[test]
fn every_log_target_is_one_of_idem_protocols() {
    let files = sources(&["idem-protocol"]);
    let literal = code_lines_with(&files, "target: \"");
    assert!(
        literal.is_empty(),
        "a log target spelt out: use idem_protocol::log\n{}",
        literal.join("\n")
    );
    let own: Vec<String> = code_lines_with(&files, "const TARGET: &str =")
        .into_iter()
        .filter(|line| !line.contains("idem_protocol::log::"))
        .collect();
    assert!(
        own.is_empty(),
        "a crate's own log target: take it from idem_protocol::log\n{}",
        own.join("\n")
    );
    // A target kept under another name, or passed to a macro some other way.
    let spelt: Vec<String> = ["&str = \"idem::", "target = \"idem"]
        .iter()
        .flat_map(|needle| code_lines_with(&files, needle))
        .collect();
    assert!(
        spelt.is_empty(),
        "a log target spelt out: use idem_protocol::log\n{}",
        spelt.join("\n")
    );
}

#[test]
fn credentials_are_digested_only_by_the_contracts_scope_function() {
    // idem-core digests keys and fingerprints, never a request's credentials.
    let files = sources(&["idem-protocol", "idem-core"]);
    let digests = code_lines_with(&files, "Sha256");
    assert!(
        digests.is_empty(),
        "a SHA-256 outside idem-protocol and idem-core: the scope digest is \
         idem_protocol::scope's\n{}",
        digests.join("\n")
    );
    // The layer reads the header, in one place, and hands it to the contract's function.
    let readers: Vec<String> = code_lines_with(&files, "header::AUTHORIZATION")
        .into_iter()
        .filter(|line| !line.contains("idem-http/src/request/scope.rs"))
        .collect();
    assert!(readers.is_empty(), "{}", readers.join("\n"));
}

#[test]
fn the_key_headers_grammar_is_parsed_only_in_idem_protocol() {
    let files = sources(&["idem-protocol"]);
    let found = code_lines_with(&files, "fn sf_string(");
    assert!(
        found.is_empty(),
        "an sf-string parser outside idem_protocol::key\n{}",
        found.join("\n")
    );
}
