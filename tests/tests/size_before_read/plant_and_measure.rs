//! What the size-before-read tests share: the sizes (a planted outcome far over the longest
//! one a call replays, and the most its refusal may allocate), the call they replay, the
//! reason a store refuses it for, and the measure of what the refused replay allocated, by
//! the binary's counting allocator. A test that measures runs alone (`= alone` in its
//! module's list), so that no other test's allocations are counted.

use idem_core::{Call, Error, Fingerprint, Idempotency, Key};
use idem_tests::peak::Counting;

#[global_allocator]
static ALLOC: Counting = Counting::new();

/// The planted outcome.
pub(crate) const BODY: usize = 64 << 20;
/// The longest outcome the calls replay.
pub(crate) const MAX_OUTCOME: usize = 1 << 20;
/// What a refused replay may allocate at most: a few times the limit, far below the record.
const MAX_PEAK: usize = 8 << 20;

/// The key of the record the tests plant, on `idem`.
pub(crate) fn key(idem: &Idempotency) -> Key {
    idem.key("reports.render").part("r-1").finish().unwrap()
}

/// The call of `key` that planted the record, with no bound on what it replays.
pub(crate) fn planting_call(key: &Key) -> Call {
    Call::new(key.clone(), Fingerprint::of(&"r-1").unwrap())
}

/// The call of `key` that replays at most [`MAX_OUTCOME`] bytes.
pub(crate) fn call(key: &Key) -> Call {
    planting_call(key).with_max_outcome(MAX_OUTCOME)
}

/// Why a store refuses a stored outcome of `length` bytes to a call that replays at most
/// `max`.
pub(crate) fn too_long(length: usize, max: usize) -> String {
    format!("the stored outcome is {length} bytes long, over the {max} bytes this call replays")
}

/// Replays `call` on `idem`, which must refuse it as a corrupt record, and returns the
/// refusal's reason; fails if the replay allocated [`MAX_PEAK`] bytes or more for a record of
/// `length`.
pub(crate) async fn refused_replay(idem: &Idempotency, call: Call, length: usize) -> String {
    let base = ALLOC.mark();
    let result = idem
        .run(call, async { Ok::<_, Error>(String::new()) })
        .await;
    let peak = ALLOC.peak_above(base);
    let reason = match result {
        Err(Error::CorruptRecord { reason, .. }) => reason,
        other => panic!("expected CorruptRecord, got {other:?}"),
    };
    assert!(
        peak < MAX_PEAK,
        "a refused replay allocated {peak} bytes for a record of {length}"
    );
    reason
}
