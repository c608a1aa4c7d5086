//! The engine and the conformance suite on idem-core alone: every check against
//! [`ReferenceStore`], the store contract in its plainest form; and again, as `cached::NAME`,
//! with a replay cache in front of it in every handle the checks build, since a cached replay
//! must keep every semantic the store alone keeps.

use std::sync::Arc;

use async_trait::async_trait;
use idem_conformance::{ReferenceStore, Target};
use idem_core::{store::Store, Key, ReplayCache};

struct Reference(Arc<ReferenceStore>);

#[async_trait]
impl Target for Reference {
    fn store(&self) -> Arc<dyn Store> {
        self.0.clone()
    }

    /// A map of typed records holds nothing undecodable.
    async fn corrupt(&self, _: &Key) -> bool {
        false
    }
}

struct Cached(Arc<ReferenceStore>);

#[async_trait]
impl Target for Cached {
    fn store(&self) -> Arc<dyn Store> {
        self.0.clone()
    }

    /// A map of typed records holds nothing undecodable.
    async fn corrupt(&self, _: &Key) -> bool {
        false
    }

    fn replay_cache(&self) -> Option<ReplayCache> {
        Some(ReplayCache::new(1_000, 1 << 20))
    }
}

async fn reference() -> Option<Reference> {
    Some(Reference(Arc::new(ReferenceStore::new())))
}

async fn cached() -> Option<Cached> {
    Some(Cached(Arc::new(ReferenceStore::new())))
}

idem_conformance::conformance_tests!(reference, cached => cached);
