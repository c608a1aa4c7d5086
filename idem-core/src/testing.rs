//! The store conformance suite: every semantic of idem checked against a real store.
//!
//! Implement [`Target`] for your store and generate one test per check with
//! [`conformance_tests!`](crate::conformance_tests):
//!
//! ```ignore
//! async fn target() -> Option<MyTarget> { Some(MyTarget::connect().await) }
//! idem_core::conformance_tests!(target);
//! ```

use std::sync::Arc;

use async_trait::async_trait;

use crate::{Key, Store};

/// A store under test.
#[async_trait]
pub trait Target: Send + Sync + 'static {
    /// The store. Called once per check; checks use keys of their own namespace, so the store
    /// may be shared between checks.
    fn store(&self) -> Arc<dyn Store>;

    /// Writes a value under `key` that the store cannot decode, bypassing the store's API.
    /// Returns `false` if the backend cannot hold such a value (the check is then skipped).
    async fn corrupt(&self, key: &Key) -> bool;
}
