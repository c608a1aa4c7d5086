//! The PostgreSQL store's step columns: values kept byte for byte, no step data left behind
//! by a takeover of another call or a completion, rows with kept steps spared by the purge,
//! and tables created before the columns existed upgraded by `migrate`.

use std::time::Duration;

use idem_core::{
    store::{
        Claim, Completed, InProgress, Outcome, OwnerToken, Record, Reservation, Store, Timestamp,
        LEASE_GRACE,
    },
    Fingerprint, Key, KeyBuilder,
};
use idem_stores::postgres::PostgresStore;
use idem_test_servers::postgres::TestPg;

const NOW: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const SECOND: Duration = Duration::from_secs(1);
const LEASE: Duration = Duration::from_secs(30);

fn key(name: &str) -> Key {
    KeyBuilder::new("steps", "checkout")
        .part(name)
        .finish()
        .unwrap()
}

fn fingerprint(call: &str) -> Fingerprint {
    Fingerprint::of(call).unwrap()
}

/// Reserves `name` for `call` at `now`, leased until `lease_until`; returns the owner.
async fn reserve(
    store: &PostgresStore,
    name: &str,
    call: &str,
    lease_until: Timestamp,
    now: Timestamp,
) -> OwnerToken {
    let owner = OwnerToken::generate();
    let record = InProgress::new(owner.clone(), fingerprint(call), lease_until);
    let reserved = store
        .reserve(&key(name), &Claim::new(record, now))
        .await
        .unwrap();
    assert!(matches!(reserved, Reservation::Reserved(_)), "{reserved:?}");
    owner
}

async fn in_progress(store: &PostgresStore, name: &str) -> InProgress {
    match store.get(&key(name)).await.unwrap() {
        Some(Record::InProgress(held)) => held,
        other => panic!("expected an in-progress record under {name}, found {other:?}"),
    }
}

/// Whether the row of `name` has anything in its step columns.
async fn step_columns_set(target: &TestPg, name: &str) -> bool {
    sqlx::query_scalar(
        "SELECT steps IS NOT NULL OR steps_kept_until IS NOT NULL FROM idem_records \
         WHERE key = $1",
    )
    .bind(target.store.row_key(&key(name)))
    .fetch_one(&target.pool)
    .await
    .unwrap()
}

async fn step_values_come_back_byte_for_byte() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let store = &target.store;
    let owner = reserve(store, "values", "checkout", NOW + LEASE, NOW).await;
    let values: &[(&str, &[u8])] = &[
        ("spaced", br#"{ "b" : 1.50 , "a":[1e2, "x\"y"], "b": 2 }"#),
        ("unicode", "\"caf\u{e9} \u{1f600}\"".as_bytes()),
        ("nul", b"\"a\0b\""),
        ("binary", &[0xff, 0x00, 0x80, 0x7f]),
        ("empty", b""),
    ];
    let kept = NOW + Duration::from_secs(3600);
    for (name, value) in values {
        store
            .record_step(&key("values"), &owner, name, value, kept)
            .await
            .unwrap();
    }
    let held = in_progress(store, "values").await;
    assert_eq!(held.steps().len(), values.len());
    for (name, value) in values {
        assert_eq!(held.steps().get(name), Some(*value), "step {name}");
    }
    assert_eq!(held.steps().kept_until(), kept);

    let readable: String = sqlx::query_scalar("SELECT steps ->> 'spaced' FROM idem_records")
        .fetch_one(&target.pool)
        .await
        .unwrap();
    assert_eq!(
        readable.as_bytes(),
        values[0].1,
        "JSON in ASCII reads as it is"
    );

    // A step recorded again replaces its value; an earlier keep-until does not shorten it.
    store
        .record_step(&key("values"), &owner, "spaced", b"2", NOW + SECOND)
        .await
        .unwrap();
    let held = in_progress(store, "values").await;
    assert_eq!(held.steps().get("spaced"), Some(&b"2"[..]));
    assert_eq!(held.steps().len(), values.len());
    assert_eq!(held.steps().kept_until(), kept);
}

async fn another_calls_takeover_leaves_no_step_behind() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let store = &target.store;
    let then = NOW - LEASE_GRACE - LEASE * 2;
    let owner = reserve(store, "taken", "checkout", then + LEASE, then).await;
    store
        .record_step(&key("taken"), &owner, "charge", b"\"ch_1\"", then + SECOND)
        .await
        .unwrap();
    assert!(step_columns_set(&target, "taken").await);

    let other = InProgress::new(OwnerToken::generate(), fingerprint("another"), NOW + LEASE);
    match store
        .reserve(&key("taken"), &Claim::new(other, NOW))
        .await
        .unwrap()
    {
        Reservation::TookOver { previous, record } => {
            assert_eq!(previous, owner);
            assert!(record.steps().is_empty(), "{record:?}");
            assert_eq!(record.steps().kept_until(), Timestamp::EPOCH);
        }
        other => panic!("an abandoned record whose steps expired is free, got {other:?}"),
    }
    assert!(
        !step_columns_set(&target, "taken").await,
        "the old call's steps must be gone from the row"
    );
}

async fn a_completed_record_keeps_no_step() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let store = &target.store;
    let owner = reserve(store, "done", "checkout", NOW + LEASE, NOW).await;
    store
        .record_step(&key("done"), &owner, "charge", b"\"ch_1\"", NOW + LEASE)
        .await
        .unwrap();
    let done = Completed::new(
        fingerprint("checkout"),
        Outcome::ok(b"1".to_vec()),
        NOW + LEASE,
    );
    store.complete(&key("done"), &owner, &done).await.unwrap();
    assert!(!step_columns_set(&target, "done").await);

    // Step columns written into a completed row by hand are not read.
    target
        .execute_raw("UPDATE idem_records SET steps = '[1]', steps_kept_until = -1")
        .await;
    assert_eq!(
        store.get(&key("done")).await.unwrap(),
        Some(Record::Completed(done))
    );
}

async fn purge_keeps_a_record_while_its_steps_are_kept() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let store = &target.store;
    let then = NOW - LEASE_GRACE - LEASE * 2;
    for (name, kept_until) in [("kept", NOW + SECOND), ("expired", NOW)] {
        let owner = reserve(store, name, "checkout", then + LEASE, then).await;
        store
            .record_step(&key(name), &owner, "charge", b"\"ch_1\"", kept_until)
            .await
            .unwrap();
    }
    assert_eq!(store.purge_expired(NOW, 10).await.unwrap(), 1);
    assert!(store.get(&key("expired")).await.unwrap().is_none());
    assert_eq!(
        in_progress(store, "kept").await.steps().get("charge"),
        Some(&b"\"ch_1\""[..])
    );
    assert_eq!(store.purge_expired(NOW + SECOND, 10).await.unwrap(), 1);
    assert!(store.get(&key("kept")).await.unwrap().is_none());
}

async fn migrate_adds_the_step_columns_to_an_older_table() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    // The table as the store's first release created it.
    target
        .execute_raw(
            "CREATE TABLE older (
                key             text PRIMARY KEY,
                state           text NOT NULL,
                owner           text NOT NULL,
                fingerprint     text NOT NULL,
                live_until_ms   bigint NOT NULL,
                fencing_token   bigint,
                attempt         bigint,
                outcome         text,
                body            bytea,
                taken_over_from text,
                created_at      timestamptz NOT NULL DEFAULT now(),
                updated_at      timestamptz NOT NULL DEFAULT now()
            )",
        )
        .await;
    let store = PostgresStore::builder(target.pool.clone())
        .table("older")
        .build();
    sqlx::query(
        "INSERT INTO older (key, state, owner, fingerprint, live_until_ms, fencing_token, attempt) \
         VALUES ($1, 'in_progress', 'o-1', $2, $3, 7, 1)",
    )
    .bind(store.row_key(&key("old")))
    .bind(fingerprint("checkout").to_hex())
    .bind(i64::try_from((NOW + LEASE).as_millis()).unwrap())
    .execute(&target.pool)
    .await
    .unwrap();

    let before = store.round_trips();
    store.migrate().await.unwrap();
    assert_eq!(
        store.round_trips() - before,
        7,
        "look in the catalog, then begin, lock, look again, add the columns, index, commit"
    );
    let before = store.round_trips();
    store.migrate().await.unwrap();
    assert_eq!(
        store.round_trips() - before,
        1,
        "a table that has the columns and index is only looked up (altering would lock it)"
    );

    let owner = OwnerToken::from("o-1".to_owned());
    let held = match store.get(&key("old")).await.unwrap() {
        Some(Record::InProgress(held)) => held,
        other => panic!("the older row reads as it was, found {other:?}"),
    };
    assert_eq!(held.owner(), &owner);
    assert!(held.steps().is_empty());
    store
        .record_step(&key("old"), &owner, "charge", b"\"ch_1\"", NOW + LEASE)
        .await
        .unwrap();
    match store.get(&key("old")).await.unwrap() {
        Some(Record::InProgress(held)) => {
            assert_eq!(held.steps().get("charge"), Some(&b"\"ch_1\""[..]))
        }
        other => panic!("expected the step on the older row, found {other:?}"),
    }
}

idem_tests::module_tests! {
    async step_values_come_back_byte_for_byte,
    async another_calls_takeover_leaves_no_step_behind,
    async a_completed_record_keeps_no_step,
    async purge_keeps_a_record_while_its_steps_are_kept,
    async migrate_adds_the_step_columns_to_an_older_table,
}
