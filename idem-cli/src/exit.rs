//! The exit codes of `idem`, for scripts.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | failed: the store failed or can't be reached, a record is corrupt, the store can't list; `get` of a sealed outcome the keyring given does not open |
//! | 2 | usage: a bad command line, store URL, keyring or environment; `release` or `forget` without `--yes`; `get --raw` of a sealed outcome without a keyring |
//! | 3 | the key has no record |
//! | 4 | refused: `release` of a key that is not in progress, or that changed hands; `forget` of a key held by a call without `--running`; `get --raw` of a record without an outcome (in progress, aborted) |

/// The command did what it was asked.
pub const DONE: u8 = 0;

/// The command failed: the store failed or can't be reached, a record is corrupt, or the store
/// can't do what was asked (list, purge); `get` of a sealed outcome that the keyring given
/// does not open (the record is printed, the outcome's value not). Nothing was changed by
/// this run unless it says so.
pub const FAILED: u8 = 1;

/// The command line, the store URL, the keyring (IDEM_KEYRING, `--keyring-file`) or the
/// environment is wrong (clap's own usage errors use this code too); `release` and `forget`
/// without `--yes` also end with it, after showing the record, and `get --raw` of a sealed
/// outcome without a keyring.
pub const USAGE: u8 = 2;

/// The key has no record (`get`, `forget`, `release`): "no record under KEY".
pub const NO_RECORD: u8 = 3;

/// Refused: `release` of a key whose record is not in progress (completed, a stored error,
/// aborted), or that changed hands between the read and the release; `forget` of a key held by
/// a call (in progress) without `--running`. The record as it is now is printed; nothing was
/// changed. Also `get --raw` of a record without an outcome to write (in progress, aborted).
pub const REFUSED: u8 = 4;

/// The table above, as `idem --help` prints it.
pub(crate) const HELP: &str = "\
Exit codes:
  0  done
  1  failed: the store failed or can't be reached, a record is corrupt, the store can't list;
     `get` of a sealed outcome the keyring given does not open
  2  usage: a bad command line, store URL, keyring or environment; `release` or `forget`
     without `--yes` (after showing the record); `get --raw` of a sealed outcome without a
     keyring
  3  the key has no record (\"no record under KEY\")
  4  refused: `release` of a key that is not in progress, or that changed hands; `forget` of
     a key held by a call without `--running` (the record as it is now is printed); `get
     --raw` of a record without an outcome (in progress, aborted)";
