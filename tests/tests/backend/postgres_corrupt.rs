//! Rows the store cannot read, one column wrong at a time: each is a corrupt record naming
//! the column, on a read and through a call, never a panic.

use std::sync::atomic::{AtomicUsize, Ordering};

use idem_core::{store::Store, Call, Error, Fingerprint, Idempotency, StoreError};
use idem_test_servers::postgres::TestPg;

/// The state of a live row written first, the column then made wrong, and how.
const CASES: &[(&str, &str, &str)] = &[
    ("in_progress", "state", "state = 'paused'"),
    ("in_progress", "fingerprint", "fingerprint = 'not hex'"),
    (
        "completed",
        "fingerprint",
        "fingerprint = fingerprint || 'ff'",
    ),
    ("in_progress", "live_until_ms", "live_until_ms = -5"),
    ("in_progress", "fencing_token", "fencing_token = NULL"),
    ("in_progress", "fencing_token", "fencing_token = -1"),
    ("in_progress", "attempt", "attempt = NULL"),
    ("in_progress", "attempt", "attempt = 5000000000"),
    ("completed", "outcome", "outcome = 'maybe'"),
    ("completed", "outcome", "outcome = NULL"),
    ("completed", "body", "body = NULL"),
    ("in_progress", "steps", "steps = '[\"ch_1\"]'"),
    ("in_progress", "steps", "steps = '{\"charge\": 7}'"),
    (
        "in_progress",
        "steps",
        "steps = '{\"charge\": {\"hex\": \"not hex\"}}', steps_kept_until = 9000000000000",
    ),
    (
        "in_progress",
        "steps_kept_until",
        "steps = '{\"charge\": \"1\"}', steps_kept_until = NULL",
    ),
    (
        "in_progress",
        "steps_kept_until",
        "steps = '{\"charge\": \"1\"}', steps_kept_until = -1",
    ),
];

fn call(idem: &Idempotency, order: &str) -> Call {
    let key = idem.key("orders.create").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&order).unwrap())
}

async fn every_wrong_column_is_a_corrupt_record() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let idem = Idempotency::new(target.store.clone());
    let runs = AtomicUsize::new(0);
    for (n, (state, column, change)) in CASES.iter().enumerate() {
        let order = format!("o-{n}");
        let call = call(&idem, &order);
        sqlx::query(
            "INSERT INTO idem_records \
             (key, state, owner, fingerprint, live_until_ms, fencing_token, attempt, outcome, body) \
             VALUES ($1, $2, 'someone', $3, 9000000000000, 7, 1, 'ok', '\"done\"')",
        )
        .bind(target.store.row_key(call.key()))
        .bind(state)
        .bind(call.fingerprint().unwrap().to_hex())
        .execute(&target.pool)
        .await
        .unwrap();
        sqlx::query(&format!("UPDATE idem_records SET {change} WHERE key = $1"))
            .bind(target.store.row_key(call.key()))
            .execute(&target.pool)
            .await
            .unwrap();

        match target.store.get(call.key()).await {
            Err(StoreError::Corrupt(reason)) => assert!(
                reason.contains(&format!("`{column}`")),
                "{change}: the reason names the column: {reason}"
            ),
            other => panic!("{change}: expected a corrupt record, got {other:?}"),
        }

        let result = idem
            .run(call, async {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Error>("ran".to_owned())
            })
            .await;
        match result {
            Err(Error::CorruptRecord { reason, .. }) => {
                assert!(
                    reason.contains(&format!("`{column}`")),
                    "{change}: {reason}"
                )
            }
            // A lease deadline before the epoch has passed: the key is free to take over.
            Ok(done) if *column == "live_until_ms" => assert!(!done.replayed),
            other => panic!("{change}: expected Error::CorruptRecord, got {other:?}"),
        }
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "only the passed lease was taken over"
    );
}

idem_tests::module_tests! {
    async every_wrong_column_is_a_corrupt_record,
}
