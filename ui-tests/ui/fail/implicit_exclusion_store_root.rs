use idem_core::{idempotent, Idempotency};

struct Ctx {
    idem: Idempotency,
    user: String,
}

// Bob's transfer of 10 to Carol would replay Alice's receipt: `ctx` is in neither the key nor
// the fingerprint.
#[idempotent(store = "ctx.idem")]
async fn transfer(ctx: &Ctx, to: String, amount: u64) -> Result<u64, idem_core::Error> {
    let _ = (&ctx.user, to);
    Ok(amount)
}

fn main() {}
