//! A completed record far over a call's longest outcome, in the memory store, is refused before
//! it is copied out: the replay gets `CorruptRecord`, and allocates a small part of the record.

use idem_core::{Error, Idempotency};
use idem_stores::memory::MemoryStore;

use crate::plant_and_measure::{
    call, key, planting_call, refused_replay, too_long, BODY, MAX_OUTCOME,
};

async fn an_oversized_record_is_refused_before_it_is_copied() {
    let idem = Idempotency::new(MemoryStore::new());
    let key = key(&idem);
    // The stored outcome is a JSON string: two quotes more.
    idem.run(planting_call(&key), async { Ok::<_, Error>("x".repeat(BODY - 2)) })
        .await
        .unwrap();

    let reason = refused_replay(&idem, call(&key), BODY).await;
    assert_eq!(reason, too_long(BODY, MAX_OUTCOME));
}

idem_tests::module_tests! {
    async an_oversized_record_is_refused_before_it_is_copied = alone,
}
