//! The engine and the conformance suite on idem-core alone: every check against
//! [`ReferenceStore`], the store contract in its plainest form.

use std::sync::Arc;

use async_trait::async_trait;
use idem_conformance::{ReferenceStore, Target};
use idem_core::{store::Store, Key};

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

async fn reference() -> Option<Reference> {
    Some(Reference(Arc::new(ReferenceStore::new())))
}

idem_conformance::conformance_tests!(reference);
