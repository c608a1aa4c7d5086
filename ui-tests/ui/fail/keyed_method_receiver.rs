use idem_core::idempotent;

struct Tenant {
    name: String,
}

#[idempotent]
impl Tenant {
    // Bob's call with id 1 would replay Alice's: the receiver is in neither the key, the
    // scope nor the fingerprint.
    #[idempotent(key = "id")]
    async fn keyed(&self, id: u64) -> Result<String, idem_core::Error> {
        Ok(format!("{}-{id}", self.name))
    }
}

fn main() {}
