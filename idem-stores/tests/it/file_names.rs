//! The four store drivers name the same job by the same file, so that a reader who knows one
//! finds their way in the others: `builder.rs` (what a store is built from), `store.rs` (the
//! `Store` trait), `inventory.rs` (listing and purging), `codec.rs` (a record as the backend
//! holds it), `error.rs` (what the backend can fail with), `reserve.rs` (reserving, when it is
//! more than one statement), `wait.rs` (waiting for an in-flight duplicate), `names.rs` (the
//! names the store gives the backend's attributes, tables and indexes) and `steps.rs` (a step
//! written on its own).

use std::path::Path;

const STORES: &[&str] = &["memory", "redis", "dynamodb", "postgres"];

/// Each job's file, and the stores that have that job in a file of its own.
const JOBS: &[(&str, &[&str])] = &[
    ("builder.rs", &["memory", "redis", "dynamodb", "postgres"]),
    ("store.rs", &["memory", "redis", "dynamodb", "postgres"]),
    ("inventory.rs", &["memory", "redis", "dynamodb", "postgres"]),
    ("codec.rs", &["redis", "dynamodb", "postgres"]),
    ("error.rs", &["redis", "dynamodb", "postgres"]),
    ("reserve.rs", &["redis", "dynamodb"]),
    ("wait.rs", &["redis", "dynamodb"]),
    ("names.rs", &["dynamodb", "postgres"]),
    ("steps.rs", &["dynamodb", "postgres"]),
];

/// Names other drivers once gave those jobs.
const OTHER_NAMES: &[&str] = &[
    "layout.rs",
    "item.rs",
    "row.rs",
    "record.rs",
    "wake.rs",
    "waiting.rs",
    "takeover.rs",
    "attributes.rs",
    "errors.rs",
];

fn store_dir(store: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(store)
}

#[test]
fn each_job_has_the_same_file_name_in_every_store() {
    let mut wrong = Vec::new();
    for (file, stores) in JOBS {
        for store in *stores {
            if !store_dir(store).join(file).is_file() {
                wrong.push(format!("src/{store}/{file} is missing"));
            }
        }
    }
    for store in STORES {
        for other in OTHER_NAMES {
            if store_dir(store).join(other).exists() {
                wrong.push(format!(
                    "src/{store}/{other}: name it by its job, as the other stores do"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
