//! The response hook: what a replayed response becomes before the invoker gets it, as
//! Powertools' `response_hook` does.

use idem_core::Key;
use serde_json::Value;

/// What a [response hook](crate::IdempotentHandlerBuilder::response_hook) is told of the
/// replay it is called for.
#[derive(Debug)]
pub struct Replay<'a> {
    pub(crate) key: &'a Key,
    pub(crate) request_id: &'a str,
}

impl Replay<'_> {
    /// The call's key (under a key digest, the store keeps its digest instead).
    pub fn key(&self) -> &Key {
        self.key
    }

    /// The request id of the invocation the response is replayed to (not the one that made
    /// it).
    pub fn request_id(&self) -> &str {
        self.request_id
    }
}

/// A response hook.
pub(crate) type ResponseHook = dyn Fn(Value, &Replay<'_>) -> Value + Send + Sync;
