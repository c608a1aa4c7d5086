//! The reserve judgement is written once, in idem-core (`idem_core::store::judge_reserve`):
//! the stores written in Rust call it, and none compares the record it finds with the claim
//! itself. The copies that must stay on a backend's side, for atomicity, are the Redis script
//! (`redis/lua/reserve.lua`) and the PostgreSQL statement (`postgres/sql.rs`), which the
//! table of reserve cases checks against real servers.

use std::fs;
use std::path::{Path, PathBuf};

/// The Rust files of every store in this crate, and the conformance kit's reference store.
fn store_sources() -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.join("../../idem-conformance/src/reference.rs")];
    for store in ["memory", "redis", "dynamodb", "postgres"] {
        for entry in fs::read_dir(src.join(store)).expect("the store's folder") {
            let path = entry.expect("a folder entry").path();
            if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files
}

/// The comparisons a reserve judgement is made of: the found record's owner or fingerprint
/// against the claim's, its liveness or abandonment at the claim's time, an expiry or a lease
/// against the claim's time.
const JUDGING: &[&str] = &[
    "claim.record().owner()",
    "claim.record().fingerprint()",
    ".fingerprint() ==",
    ".fingerprint() !=",
    "is_live(claim",
    "is_abandoned(claim",
    "<= claim.now()",
    "< claim.now()",
    "claim.now() <",
];

#[test]
fn no_store_judges_a_reservation_itself() {
    let mut found = Vec::new();
    for path in store_sources() {
        let source = fs::read_to_string(&path).expect("a readable source file");
        for (number, line) in source.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for pattern in JUDGING.iter().filter(|pattern| code.contains(*pattern)) {
                found.push(format!("{}:{}: `{pattern}`", path.display(), number + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the reserve judgement is idem_core::store::judge_reserve; these lines judge again:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_store_written_in_rust_calls_the_judgement() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for path in [
        src.join("../../idem-conformance/src/reference.rs"),
        src.join("memory/shard.rs"),
        src.join("redis/reserve.rs"),
        src.join("dynamodb/reserve.rs"),
        src.join("postgres/store.rs"),
    ] {
        let source = fs::read_to_string(&path).expect("a readable source file");
        assert!(
            source.contains("judge_reserve("),
            "{} does not call judge_reserve",
            path.display()
        );
    }
}

/// The scan is not blind: the patterns match the judgement where it lives.
#[test]
fn the_patterns_find_the_judgement_in_idem_core() {
    let judge = Path::new(env!("CARGO_MANIFEST_DIR")).join("../idem-core/src/store/judge.rs");
    let source = fs::read_to_string(judge).expect("idem-core's judgement");
    assert!(JUDGING.iter().any(|pattern| source.contains(pattern)));
}
