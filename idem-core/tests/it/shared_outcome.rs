//! The outcome the engine encodes is one buffer: every attempt to complete the record hands
//! the store the same bytes, and a store that keeps them (the reference store, in memory)
//! lends them to every read rather than copying them.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use idem_conformance::{Intercepted, Interceptor, ReferenceStore};
use idem_core::{
    store::{Completed, OwnerToken, Record, Store},
    Call, Error, Fingerprint, Idempotency, Key, StoreError,
};

/// A store whose first completion fails as a dropped connection would, and which notes where
/// the outcome of each completion it is asked for lies.
#[derive(Default)]
struct FirstCompletionFails {
    inner: ReferenceStore,
    outcomes_at: Mutex<Vec<usize>>,
}

#[async_trait]
impl Interceptor for FirstCompletionFails {
    fn inner(&self) -> &dyn Store {
        &self.inner
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        let first = {
            let mut outcomes_at = self.outcomes_at.lock().unwrap();
            outcomes_at.push(record.outcome().body().as_ptr() as usize);
            outcomes_at.len() == 1
        };
        if first {
            return Err(StoreError::backend("connection reset"));
        }
        self.inner.complete(key, owner, record).await
    }
}

#[tokio::test]
async fn a_completion_retried_and_every_read_share_the_encoded_outcome() {
    let store = Arc::new(Intercepted(FirstCompletionFails::default()));
    let idem = Idempotency::from_arc(store.clone());
    let key = idem.key("orders.checkout").part("o-1").finish().unwrap();
    let call = Call::new(key.clone(), Fingerprint::of("o-1").unwrap());
    let receipt = "ch_1".repeat(256);
    let answered = idem
        .run(call.clone(), async { Ok::<_, Error>(receipt.clone()) })
        .await
        .unwrap();
    assert!(!answered.replayed);

    let outcomes_at = store.0.outcomes_at.lock().unwrap().clone();
    assert_eq!(
        outcomes_at.len(),
        2,
        "the failed completion was retried once"
    );
    assert_eq!(
        outcomes_at[0], outcomes_at[1],
        "the retry hands over the bytes the first attempt did"
    );
    for read in 0..2 {
        let Some(Record::Completed(stored)) = store.get(&key).await.unwrap() else {
            panic!("the completed record");
        };
        assert_eq!(
            stored.outcome().body().as_ptr() as usize,
            outcomes_at[0],
            "read {read} lends the bytes the engine encoded"
        );
    }
    let replayed = idem
        .run(call, async { Ok::<_, Error>(String::new()) })
        .await
        .unwrap();
    assert!(replayed.replayed);
    assert_eq!(replayed.value, receipt);
}
