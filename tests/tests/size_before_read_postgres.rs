//! A completed row whose body is far over a call's longest outcome, planted with SQL, is
//! refused before its body is read: the replay gets `CorruptRecord`, and this process never
//! holds the body. The body is made on the server (`repeat`), so planting it allocates
//! nothing here either.

use idem_core::{Call, Error, Fingerprint, Idempotency};
use idem_test_servers::postgres::TestPg;
use idem_tests::peak::Counting;

#[global_allocator]
static ALLOC: Counting = Counting::new();

/// The planted outcome.
const BODY: usize = 64 << 20;
/// The longest outcome the call replays.
const MAX_OUTCOME: usize = 1 << 20;
/// What a refused replay may allocate at most: a few times the limit, far below the body.
const MAX_PEAK: usize = 8 << 20;

async fn an_oversized_body_is_refused_before_it_is_read() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let idem = Idempotency::new(target.store.clone());
    let key = idem.key("reports.render").part("r-1").finish().unwrap();
    let call = Call::new(key, Fingerprint::of(&"r-1").unwrap()).with_max_outcome(MAX_OUTCOME);
    sqlx::query(
        "INSERT INTO idem_records \
         (key, state, owner, fingerprint, live_until_ms, outcome, body) \
         VALUES ($1, 'completed', 'someone', $2, 9000000000000, 'ok', \
         convert_to('\"' || repeat('x', $3 - 2) || '\"', 'UTF8'))",
    )
    .bind(target.store.row_key(call.key()))
    .bind(call.fingerprint().to_hex())
    .bind(BODY as i32)
    .execute(&target.pool)
    .await
    .unwrap();

    let base = ALLOC.mark();
    let result = idem
        .run(call, async { Ok::<_, Error>(String::new()) })
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
        "a refused replay allocated {peak} bytes for a body of {BODY}"
    );
}

idem_tests::backend_tests! {
    async an_oversized_body_is_refused_before_it_is_read,
}
