//! The response hook: what a replayed response becomes before the client gets it, as
//! Powertools' `response_hook` does.

use http::Response;

use crate::body::Body;

/// What a [response hook](crate::IdempotencyLayerBuilder::response_hook) is told of the
/// replay it is called for.
#[derive(Debug)]
pub struct Replay<'a> {
    pub(crate) key: &'a str,
}

impl Replay<'_> {
    /// The `Idempotency-Key` the client sent.
    pub fn key(&self) -> &str {
        self.key
    }
}

/// A response hook.
pub(crate) type ResponseHook = dyn Fn(&mut Response<Body>, &Replay<'_>) + Send + Sync;
