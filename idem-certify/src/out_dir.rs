//! The directory a run writes its histories and its report to.

use std::io;
use std::path::Path;

/// Makes `subdirs` of `dir` empty directories: a run reads back every file in them, so the
/// files an earlier run left in the same `--out` must never be read as this run's.
pub(crate) fn fresh(dir: &Path, subdirs: &[&str]) -> Result<(), String> {
    for subdir in subdirs {
        let path = dir.join(subdir);
        gone(std::fs::remove_dir_all(&path), "emptying", &path)?;
        std::fs::create_dir_all(&path)
            .map_err(|error| format!("creating {}: {error}", path.display()))?;
    }
    Ok(())
}

/// Removes `files` of `dir` that an earlier run in the same `--out` left: a history this run
/// appends to must hold this run's lines only.
pub(crate) fn without_files(dir: &Path, files: &[&str]) -> Result<(), String> {
    for file in files {
        let path = dir.join(file);
        gone(std::fs::remove_file(&path), "removing", &path)?;
    }
    Ok(())
}

/// A removal's outcome, where a path that was not there is as good as removed.
fn gone(removed: io::Result<()>, doing: &str, path: &Path) -> Result<(), String> {
    match removed {
        Err(error) if error.kind() != io::ErrorKind::NotFound => {
            Err(format!("{doing} {}: {error}", path.display()))
        }
        _ => Ok(()),
    }
}
