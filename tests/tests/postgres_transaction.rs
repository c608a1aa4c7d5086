//! `PostgresStore::complete_in_transaction`: the record completes with the caller's own
//! transaction, and the engine's completion afterwards accepts it.

use std::time::Duration;

use idem_core::{Call, Error, Fingerprint, Idempotency, ManualClock, Outcome, Record, Store};
use idem_tests::postgres::TestPg;

const TTL: Duration = Duration::from_secs(3600);
const LEASE: Duration = Duration::from_secs(30);

fn call(idem: &Idempotency, order: &str) -> Call {
    let key = idem.key("orders.place").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&order).unwrap())
        .with_ttl(TTL)
        .with_lease(LEASE)
}

async fn orders(target: &TestPg, order: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM orders WHERE id = $1")
        .bind(order)
        .fetch_one(&target.pool)
        .await
        .unwrap()
}

/// A body that writes the order row and completes the record in one transaction, committing
/// it if `commit`, and returns `value`.
async fn place(
    target: &TestPg,
    idem: &Idempotency,
    order: &str,
    commit: bool,
    value: &str,
) -> Result<idem_core::Executed<String>, Error> {
    idem.run(call(idem, order), async {
        let mut tx = target.pool.begin().await.unwrap();
        sqlx::query("INSERT INTO orders (id) VALUES ($1)")
            .bind(order)
            .execute(&mut *tx)
            .await
            .unwrap();
        target
            .store
            .complete_in_transaction(&mut tx, &format!("placed {order}"), TTL)
            .await?;
        if commit {
            tx.commit().await.unwrap();
        } else {
            tx.rollback().await.unwrap();
        }
        Ok::<_, Error>(value.to_owned())
    })
    .await
}

async fn setup() -> Option<(TestPg, Idempotency)> {
    let target = TestPg::start().await?;
    target
        .execute_raw("CREATE TABLE orders (id text NOT NULL)")
        .await;
    let idem = Idempotency::new(target.store.clone());
    Some((target, idem))
}

async fn the_record_commits_with_the_business_rows() {
    let Some((target, idem)) = setup().await else {
        return;
    };
    let before = target.store.round_trips();
    let done = place(&target, &idem, "o-1", true, "placed o-1")
        .await
        .unwrap();
    assert!(!done.replayed);
    assert_eq!(
        target.store.round_trips() - before,
        3,
        "reserve, the completion in the transaction, the engine's completion"
    );
    let replay = place(&target, &idem, "o-1", true, "placed o-1")
        .await
        .unwrap();
    assert!(replay.replayed);
    assert_eq!(replay.value, "placed o-1");
    assert_eq!(orders(&target, "o-1").await, 1);
}

async fn a_rolled_back_transaction_leaves_the_call_to_the_engine() {
    let Some((target, idem)) = setup().await else {
        return;
    };
    let done = place(&target, &idem, "o-2", false, "placed o-2")
        .await
        .unwrap();
    assert!(!done.replayed, "the engine completed the record itself");
    assert_eq!(orders(&target, "o-2").await, 0);
    let Some(Record::Completed(stored)) = target.store.get(call(&idem, "o-2").key()).await.unwrap()
    else {
        panic!("completed by the engine")
    };
    assert_eq!(stored.outcome(), &Outcome::Ok(b"\"placed o-2\"".to_vec()));
}

async fn another_value_than_the_committed_one_is_not_recorded() {
    let Some((target, idem)) = setup().await else {
        return;
    };
    let err = place(&target, &idem, "o-3", true, "something else")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotRecorded { .. }), "{err:?}");
    let replay = place(&target, &idem, "o-3", true, "placed o-3")
        .await
        .unwrap();
    assert!(replay.replayed);
    assert_eq!(replay.value, "placed o-3", "the committed value stands");
    assert_eq!(orders(&target, "o-3").await, 1);
}

async fn a_caller_taken_over_changes_nothing() {
    let Some((target, _)) = setup().await else {
        return;
    };
    let clock = ManualClock::new();
    let idem = Idempotency::new(target.store.clone()).with_clock(clock.clone());
    let err = idem
        .run(call(&idem, "o-4"), async {
            // The lease passes and a retry takes the key over before this body finishes.
            clock.advance(LEASE + Duration::from_millis(1));
            let retry = idem
                .run(call(&idem, "o-4"), async {
                    Ok::<_, Error>("retry".to_owned())
                })
                .await
                .unwrap();
            assert!(!retry.replayed);
            let mut tx = target.pool.begin().await.unwrap();
            let err = target
                .store
                .complete_in_transaction(&mut tx, "stale", TTL)
                .await
                .unwrap_err();
            assert!(matches!(err, Error::LeaseLost { .. }), "{err:?}");
            tx.rollback().await.unwrap();
            Err::<String, _>(err)
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::LeaseLost { .. }), "{err:?}");
    let replay = idem
        .run(call(&idem, "o-4"), async {
            Ok::<_, Error>("third".to_owned())
        })
        .await
        .unwrap();
    assert_eq!(replay.value, "retry");
}

async fn a_call_with_steps_completes_in_its_transaction() {
    let Some((target, idem)) = setup().await else {
        return;
    };
    let key = call(&idem, "o-5").key().clone();
    let before = target.store.round_trips();
    let done = idem
        .run(call(&idem, "o-5"), async {
            let charge =
                idem_core::step("charge", async { Ok::<_, Error>("ch_1".to_owned()) }).await?;
            let mut tx = target.pool.begin().await.unwrap();
            sqlx::query("INSERT INTO orders (id) VALUES ('o-5')")
                .execute(&mut *tx)
                .await
                .unwrap();
            let receipt = format!("placed o-5 with {charge}");
            target
                .store
                .complete_in_transaction(&mut tx, &receipt, TTL)
                .await?;
            tx.commit().await.unwrap();
            Ok::<_, Error>(receipt)
        })
        .await
        .unwrap();
    assert!(!done.replayed);
    assert_eq!(
        target.store.round_trips() - before,
        4,
        "reserve, the step, the completion in the transaction, the engine's completion"
    );
    let Some(Record::Completed(stored)) = target.store.get(&key).await.unwrap() else {
        panic!("completed in the transaction")
    };
    assert_eq!(
        stored.outcome(),
        &Outcome::Ok(b"\"placed o-5 with ch_1\"".to_vec())
    );
    let steps_left: bool = sqlx::query_scalar(
        "SELECT steps IS NOT NULL OR steps_kept_until IS NOT NULL FROM idem_records",
    )
    .fetch_one(&target.pool)
    .await
    .unwrap();
    assert!(!steps_left, "the completed row keeps no step");
    assert_eq!(orders(&target, "o-5").await, 1);
}

async fn outside_a_call_it_is_refused() {
    let Some((target, _)) = setup().await else {
        return;
    };
    let mut tx = target.pool.begin().await.unwrap();
    let err = target
        .store
        .complete_in_transaction(&mut tx, "value", TTL)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Rejected { .. }), "{err:?}");
}

idem_tests::backend_tests! {
    async the_record_commits_with_the_business_rows,
    async a_rolled_back_transaction_leaves_the_call_to_the_engine,
    async another_value_than_the_committed_one_is_not_recorded,
    async a_caller_taken_over_changes_nothing,
    async a_call_with_steps_completes_in_its_transaction,
    async outside_a_call_it_is_refused,
}
