use idem_core::{idempotent, Idempotency};

struct Account {
    idem: Idempotency,
    owner: String,
}

#[idempotent]
impl Account {
    // A deposit into Bob's account would replay the receipt of one into Alice's: `self` is in
    // neither the key nor the fingerprint.
    #[idempotent(store = "self.idem")]
    async fn deposit(&self, amount: u64) -> Result<u64, idem_core::Error> {
        let _ = &self.owner;
        Ok(amount)
    }
}

fn main() {}
