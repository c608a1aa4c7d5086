//! A completed row whose body is far over a call's longest outcome, planted with SQL, is
//! refused before its body is read: the replay gets `CorruptRecord`, and this process never
//! holds the body. The body is made on the server (`repeat`), so planting it allocates
//! nothing here either.

use idem_core::Idempotency;
use idem_test_servers::postgres::TestPg;

use crate::plant_and_measure::{call, key, refused_replay, too_long, BODY, MAX_OUTCOME};

async fn an_oversized_body_is_refused_before_it_is_read() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let idem = Idempotency::new(target.store.clone());
    let call = call(&key(&idem));
    sqlx::query(
        "INSERT INTO idem_records \
         (key, state, owner, fingerprint, live_until_ms, outcome, body) \
         VALUES ($1, 'completed', 'someone', $2, 9000000000000, 'ok', \
         convert_to('\"' || repeat('x', $3 - 2) || '\"', 'UTF8'))",
    )
    .bind(target.store.row_key(call.key()))
    .bind(call.fingerprint().unwrap().to_hex())
    .bind(BODY as i32)
    .execute(&target.pool)
    .await
    .unwrap();

    let reason = refused_replay(&idem, call, BODY).await;
    assert_eq!(reason, too_long(BODY, MAX_OUTCOME));
}

idem_tests::module_tests! {
    async an_oversized_body_is_refused_before_it_is_read = alone,
}
