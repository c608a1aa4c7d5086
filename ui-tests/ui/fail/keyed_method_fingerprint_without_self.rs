use idem_core::idempotent;

struct Tenant {
    name: String,
}

#[idempotent]
impl Tenant {
    // Listing the fingerprinted arguments says nothing of the receiver, which the key ignores.
    #[idempotent(key = "id", fingerprint = "id")]
    async fn keyed(&self, id: u64, note: String) -> Result<String, idem_core::Error> {
        let _ = note;
        Ok(format!("{}-{id}", self.name))
    }
}

fn main() {}
