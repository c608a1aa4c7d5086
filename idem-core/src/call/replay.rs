//! What a response hook is told of a replay: `#[idempotent(response_hook = "...")]`, as
//! Powertools' `response_hook`.

use crate::key::Key;

/// What an [`#[idempotent]`](crate::idempotent) function's `response_hook` is told of the
/// replay it is called for.
#[derive(Debug)]
pub struct Replay<'a> {
    pub(crate) key: &'a Key,
}

impl Replay<'_> {
    /// The call's key (under [`name_keys_by_digest`](crate::Idempotency::name_keys_by_digest), the
    /// store and the logs name it by its digest instead).
    pub fn key(&self) -> &Key {
        self.key
    }
}
