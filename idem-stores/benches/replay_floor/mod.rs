//! The replay's floor, that the memory-store report benches measure a replay against: what a
//! replay cannot avoid whatever the store (build the key, fingerprint the request, decode the
//! stored result).

use idem_core::{Fingerprint, Idempotency};

use crate::charge::{charge, key, ChargeRequest, Receipt};

/// What a replay of `req` cannot avoid: its key, its fingerprint and decoding `stored`, the
/// result its first call kept (see [`stored_result`]).
pub fn replay_floor(idem: &Idempotency, req: &ChargeRequest, stored: &[u8]) -> Receipt {
    let key = key(idem, req).unwrap();
    let fingerprint = Fingerprint::of(req).unwrap();
    std::hint::black_box((key, fingerprint));
    serde_json::from_slice(stored).unwrap()
}

/// The result a call with `req` keeps, as [`replay_floor`] decodes it.
pub async fn stored_result(req: &ChargeRequest) -> Vec<u8> {
    serde_json::to_vec(&charge(req).await.unwrap()).unwrap()
}
