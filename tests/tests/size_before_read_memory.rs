//! A completed record far over a call's longest outcome, in the memory store, is refused before
//! it is copied out: the replay gets `CorruptRecord`, and allocates a small part of the record.

use idem_core::{Call, Error, Fingerprint, Idempotency};
use idem_stores::memory::MemoryStore;
use idem_tests::peak::Counting;

#[global_allocator]
static ALLOC: Counting = Counting::new();

/// The stored outcome, as a JSON string: two quotes more.
const BODY: usize = 64 << 20;
/// The longest outcome the call replays.
const MAX_OUTCOME: usize = 1 << 20;
/// What a refused replay may allocate at most: a few times the limit, far below the record.
const MAX_PEAK: usize = 8 << 20;

#[tokio::test]
async fn an_oversized_record_is_refused_before_it_is_copied() {
    let idem = Idempotency::new(MemoryStore::new());
    let call = || {
        let key = idem.key("reports.render").part("r-1").finish().unwrap();
        Call::new(key, Fingerprint::of(&"r-1").unwrap())
    };
    idem.run(call(), async { Ok::<_, Error>("x".repeat(BODY - 2)) })
        .await
        .unwrap();

    let base = ALLOC.mark();
    let result = idem
        .run(call().with_max_outcome(MAX_OUTCOME), async {
            Ok::<_, Error>(String::new())
        })
        .await;
    let peak = ALLOC.peak_above(base);
    match result {
        Err(Error::CorruptRecord { reason, .. }) => assert_eq!(
            reason,
            format!(
                "the stored outcome is {BODY} bytes long, over the {MAX_OUTCOME} bytes this call \
                 replays"
            )
        ),
        other => panic!("expected CorruptRecord, got {other:?}"),
    }
    assert!(
        peak < MAX_PEAK,
        "a refused replay allocated {peak} bytes for a record of {BODY}"
    );
}
