//! The directory a run writes its histories and its report to.

use std::fs;
use std::path::Path;

/// Makes `subdirs` of `dir` empty directories: a run reads back every file in them, so the
/// files an earlier run left in the same `--out` must never be read as this run's.
pub(crate) fn fresh(dir: &Path, subdirs: &[&str]) -> Result<(), String> {
    for subdir in subdirs {
        let path = dir.join(subdir);
        match fs::remove_dir_all(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(format!("emptying {}: {error}", path.display())),
        }
        fs::create_dir_all(&path)
            .map_err(|error| format!("creating {}: {error}", path.display()))?;
    }
    Ok(())
}

/// Removes `files` of `dir` that an earlier run in the same `--out` left: a history this run
/// appends to must hold this run's lines only.
pub(crate) fn without_files(dir: &Path, files: &[&str]) -> Result<(), String> {
    for file in files {
        let path = dir.join(file);
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(format!("removing {}: {error}", path.display())),
        }
    }
    Ok(())
}
