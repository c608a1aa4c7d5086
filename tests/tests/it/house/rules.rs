//! The house's rules that a reader of any crate relies on: no source file over 500 lines (a
//! file that grows past it has two jobs; a module's unit tests go in its own `tests.rs`), and
//! no hidden re-export that another crate reaches an item through.

use std::fs;
use std::path::PathBuf;

use super::sources::{rust_files, workspace};

const MAX_LINES: usize = 500;

/// Every `.rs` file under the `src/` of each crate of the workspace, unit-test files apart.
fn sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(workspace()).unwrap() {
        files.extend(rust_files(&entry.unwrap().path().join("src")));
    }
    files.retain(|path| !path.ends_with("tests.rs"));
    assert!(files.len() > 100, "the crates' sources were found");
    files
}

/// The files of `files` over `max` lines, with their lengths.
fn too_long(files: &[PathBuf], max: usize) -> Vec<String> {
    files
        .iter()
        .filter_map(|path| {
            let lines = fs::read_to_string(path).unwrap().lines().count();
            (lines > max).then(|| format!("{} has {lines} lines", path.display()))
        })
        .collect()
}

#[test]
fn no_source_file_is_over_500_lines() {
    let long = too_long(&sources(), MAX_LINES);
    assert!(
        long.is_empty(),
        "split each by its jobs (unit tests go in a tests.rs beside it):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_length_check_names_a_long_file() {
    // The check itself, on this very file with a bound it passes.
    let here = workspace().join(file!());
    assert_eq!(too_long(std::slice::from_ref(&here), 20).len(), 1);
    assert!(too_long(&[here], 10_000).is_empty());
}

#[test]
fn no_crate_reexports_an_item_hidden() {
    let hidden: Vec<String> = sources()
        .iter()
        .filter_map(|path| {
            let text = fs::read_to_string(path).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            let found = lines.windows(2).any(|pair| {
                pair[0].trim() == "#[doc(hidden)]" && pair[1].trim_start().starts_with("pub use ")
            });
            found.then(|| path.display().to_string())
        })
        .collect();
    assert!(
        hidden.is_empty(),
        "give each item one public path, not a hidden second one: {hidden:?}"
    );
}
