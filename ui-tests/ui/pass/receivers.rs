//! A keyed method says what its receiver contributes: a scope or key from it, or that every
//! receiver is the same service.
use idem_core::{idempotent, Idempotency};

struct Tenant {
    name: String,
    idem: Idempotency,
}

#[idempotent]
impl Tenant {
    #[idempotent(key = "id", scope = "self.name")]
    async fn scoped(&self, id: u64) -> Result<u64, idem_core::Error> {
        Ok(id)
    }

    #[idempotent(key = "self.name + id")]
    async fn keyed_by_self(&self, id: u64) -> Result<u64, idem_core::Error> {
        Ok(id)
    }

    #[idempotent(key = "id", skip = "self")]
    async fn same_service(&self, id: u64) -> Result<u64, idem_core::Error> {
        Ok(id)
    }

    #[idempotent(key = "id", fingerprint = "id", skip = "self")]
    async fn listed(&self, id: u64, note: String) -> Result<u64, idem_core::Error> {
        let _ = note;
        Ok(id)
    }

    #[idempotent(key = "id", store = "self.idem", skip = "self")]
    async fn own_store(&self, id: u64) -> Result<u64, idem_core::Error> {
        Ok(id)
    }
}

fn main() {}
