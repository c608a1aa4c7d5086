//! `PostgresStore::complete_in_transaction`: the record completes with the caller's own
//! transaction, and the engine's completion afterwards accepts it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use idem_core::{
    store::{Outcome, Record, Store},
    Call, Error, Fingerprint, Idempotency, ManualClock,
};
use idem_stores::postgres::RequestFailed;
use idem_test_servers::postgres::server::TestPostgres;
use idem_test_servers::postgres::TestPg;
use sqlx::postgres::PgPoolOptions;
use sqlx::{Connection, PgConnection};

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
) -> Result<idem_core::Answered<String>, Error> {
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
    assert_eq!(stored.outcome(), &Outcome::ok(b"\"placed o-2\"".to_vec()));
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
        &Outcome::ok(b"\"placed o-5 with ch_1\"".to_vec())
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
    let why = std::error::Error::source(&err).map(ToString::to_string);
    assert!(
        why.as_deref()
            .is_some_and(|why| why.contains("call it from the body of an `#[idempotent]`")),
        "the refusal says where to call it from: {why:?}"
    );
}

/// The advisory lock a slow commit waits on.
const COMMIT_GATE: i64 = 77;

/// Semantic 13: a commit that takes a while holds the completed row locked, and a renewal
/// that arrives meanwhile waits for it, then finds the row completed. That is this call's own
/// completion, not a takeover: the call succeeds and `lease_lost()` does not fire.
async fn a_renewal_that_waits_for_a_slow_commit_is_no_lost_lease() {
    let Some((target, idem)) = setup().await else {
        return;
    };
    // A deferred trigger waits at commit for a lock the test holds: a commit as slow as the
    // test wants, as synchronous replication or a slow deferred constraint make it.
    target
        .execute_raw(&format!(
            "CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             PERFORM pg_advisory_xact_lock_shared({COMMIT_GATE}); RETURN NULL; END $$"
        ))
        .await;
    target
        .execute_raw(
            "CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON orders \
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()",
        )
        .await;
    let mut gate = PgConnection::connect(&target.url).await.unwrap();
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(COMMIT_GATE)
        .execute(&mut gate)
        .await
        .unwrap();
    let lease = Duration::from_millis(1500);
    let lost = AtomicBool::new(false);
    let placing = idem.run(call(&idem, "o-6").with_lease(lease), async {
        let mut tx = target.pool.begin().await.unwrap();
        sqlx::query("INSERT INTO orders (id) VALUES ('o-6')")
            .execute(&mut *tx)
            .await
            .unwrap();
        let receipt = "placed o-6".to_owned();
        target
            .store
            .complete_in_transaction(&mut tx, &receipt, TTL)
            .await?;
        tx.commit().await.unwrap();
        // Time for a renewal that took the completion for a takeover to say so.
        let context = idem_core::context().expect("a context");
        let fired = tokio::time::timeout(lease, context.lease_lost())
            .await
            .is_ok();
        lost.store(fired, Ordering::SeqCst);
        Ok::<_, Error>(receipt)
    });
    let opening = async {
        target
            .wait_until(
                "a renewal to wait for the commit",
                "SELECT count(*) > 0 FROM pg_stat_activity WHERE datname = current_database() \
                 AND wait_event_type = 'Lock' AND query LIKE 'UPDATE % SET live_until_ms = $3,%'",
            )
            .await;
        sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(COMMIT_GATE)
            .execute(&mut gate)
            .await
            .unwrap();
    };
    let (placed, ()) = tokio::join!(placing, opening);
    let placed = placed.expect("a commit a renewal waited for is a completed call");
    assert!(!placed.replayed);
    assert_eq!(placed.value, "placed o-6");
    assert!(
        !lost.load(Ordering::SeqCst),
        "lease_lost() fired, but no one took the key over"
    );
    let replay = place(&target, &idem, "o-6", true, "placed o-6")
        .await
        .unwrap();
    assert!(replay.replayed);
    assert_eq!(orders(&target, "o-6").await, 1);
}

/// The in-transaction completion is fenced by the owner too: another process's reservation
/// that happens to carry the same fencing token (tokens come from clocks) is not completed.
async fn an_owner_with_the_same_fencing_token_is_not_completed() {
    let Some((target, idem)) = setup().await else {
        return;
    };
    let key = call(&idem, "o-7").key().clone();
    let row_key = target.store.row_key(&key);
    let err = idem
        .run(call(&idem, "o-7"), async {
            // Another process reserves the key with this call's fencing token.
            sqlx::query("UPDATE idem_records SET owner = 'another process' WHERE key = $1")
                .bind(&row_key)
                .execute(&target.pool)
                .await
                .unwrap();
            let mut tx = target.pool.begin().await.unwrap();
            let refused = target
                .store
                .complete_in_transaction(&mut tx, "mine", TTL)
                .await;
            tx.rollback().await.unwrap();
            refused.map(|()| "mine".to_owned())
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::LeaseLost { .. }), "{err:?}");
    let Some(Record::InProgress(theirs)) = target.store.get(&key).await.unwrap() else {
        panic!("the other process's reservation stands")
    };
    assert_eq!(theirs.owner().as_str(), "another process");
}

/// A body holding the only connection of the pool in a transaction while it records a step:
/// the step's write can never get a connection. The error says so, and how to size the pool.
async fn a_pool_too_small_for_a_step_in_a_transaction_says_so() {
    let Some(server) = TestPostgres::start() else {
        return;
    };
    let options = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_millis(300));
    let target = TestPg::on_with(server, options).await;
    let idem = Idempotency::new(target.store.clone());
    // The step's record is tried again while the lease holds: a short one ends the test soon.
    let call = call(&idem, "o-8").with_lease(Duration::from_secs(2));
    let err = idem
        .run(call, async {
            let tx = target.pool.begin().await.unwrap();
            let charged = idem_core::step("charge", async { Ok::<_, Error>(1) }).await;
            tx.rollback().await.unwrap();
            charged
        })
        .await
        .unwrap_err();
    let Error::NotRecorded { cause, .. } = &err else {
        panic!("the step ran but could not be recorded: {err:?}")
    };
    let Error::Store { source, .. } = &**cause else {
        panic!("a store failure: {cause:?}")
    };
    let failed = source
        .downcast_ref::<RequestFailed>()
        .unwrap_or_else(|| panic!("a PostgreSQL request failure: {source:?}"));
    assert!(failed.is_pool_exhausted(), "{failed}");
    let message = failed.to_string();
    for named in [
        "no free connection",
        "1 of at most 1",
        "open transaction",
        "pool of its own",
    ] {
        assert!(message.contains(named), "{named:?} not in {message:?}");
    }
}

/// With sealing and key digests on, the transaction completes the record under the stored
/// key, sealed: the handle replays it, and the row holds neither the order nor the answer.
#[cfg(feature = "seal")]
async fn a_sealed_record_commits_with_the_business_rows() {
    let Some((target, idem)) = setup().await else {
        return;
    };
    let idem = idem
        .with_sealing(idem_tests::sealed::keyring())
        .with_key_digest(idem_tests::sealed::KEY_DIGEST_SECRET);
    let done = place(&target, &idem, "o-secret-9", true, "placed o-secret-9")
        .await
        .unwrap();
    assert!(!done.replayed);
    let replay = place(&target, &idem, "o-secret-9", true, "placed o-secret-9")
        .await
        .unwrap();
    assert!(replay.replayed);
    assert_eq!(replay.value, "placed o-secret-9");
    assert_eq!(orders(&target, "o-secret-9").await, 1);
    let rows: Vec<(String, Vec<u8>)> = sqlx::query_as(&format!(
        "SELECT key, coalesce(body, ''::bytea) FROM {}",
        idem_stores::postgres::DEFAULT_TABLE
    ))
    .fetch_all(&target.pool)
    .await
    .unwrap();
    let sealed = rows
        .iter()
        .find(|(key, _)| key.ends_with(idem.stored_key(call(&idem, "o-secret-9").key()).as_str()))
        .expect("the record under its stored key");
    assert!(!sealed.0.contains("o-secret-9"));
    assert!(
        !sealed.1.windows(9).any(|w| w == b"o-secret-"),
        "the answer is sealed"
    );
}

/// Without the `seal` feature there is nothing to check.
#[cfg(not(feature = "seal"))]
async fn a_sealed_record_commits_with_the_business_rows() {}

idem_tests::module_tests! {
    async a_sealed_record_commits_with_the_business_rows,
    async the_record_commits_with_the_business_rows,
    async a_rolled_back_transaction_leaves_the_call_to_the_engine,
    async another_value_than_the_committed_one_is_not_recorded,
    async a_caller_taken_over_changes_nothing,
    async a_call_with_steps_completes_in_its_transaction,
    async outside_a_call_it_is_refused,
    async a_renewal_that_waits_for_a_slow_commit_is_no_lost_lease,
    async an_owner_with_the_same_fencing_token_is_not_completed,
    async a_pool_too_small_for_a_step_in_a_transaction_says_so,
}
