//! The exit codes of `idem`, for scripts.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | failed: the store failed or can't be reached, a record is corrupt, the store can't list |
//! | 2 | usage: a bad command line, store URL or environment; `release` or `forget` without `--yes` |
//! | 3 | the key has no record |
//! | 4 | refused: `release` of a key that is not in progress, or that changed hands; `forget` of a key held by a call without `--running` |

/// The command did what it was asked.
pub const DONE: u8 = 0;

/// The command failed: the store failed or can't be reached, a record is corrupt, or the store
/// can't do what was asked (list, purge). Nothing was changed by this run unless it says so.
pub const FAILED: u8 = 1;

/// The command line, the store URL or the environment is wrong (clap's own usage errors use
/// this code too); `release` and `forget` without `--yes` also end with it, after showing the
/// record.
pub const USAGE: u8 = 2;

/// The key has no record (`get`, `forget`, `release`): "no record under KEY".
pub const NO_RECORD: u8 = 3;

/// Refused: `release` of a key whose record is not in progress (completed, a stored error,
/// aborted), or that changed hands between the read and the release; `forget` of a key held by
/// a call (in progress) without `--running`. The record as it is now is printed; nothing was
/// changed.
pub const REFUSED: u8 = 4;

/// The table above, as `idem --help` prints it.
pub(crate) const HELP: &str = "\
Exit codes:
  0  done
  1  failed: the store failed or can't be reached, a record is corrupt, the store can't list
  2  usage: a bad command line, store URL or environment; `release` or `forget` without
     `--yes` (after showing the record)
  3  the key has no record (\"no record under KEY\")
  4  refused: `release` of a key that is not in progress, or that changed hands; `forget` of
     a key held by a call without `--running` (the record as it is now is printed)";
