//! Statements per call, counted twice: by the server (`pg_stat_statements`, every statement
//! executed on the table) and by the store (`PostgresStore::round_trips`). The two must agree.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idem_core::{
    store::{Claim, InProgress, OwnerToken, Reservation, Store, Timestamp},
    Call, Clock, Error, Fingerprint, Idempotency, SystemClock,
};
use idem_test_servers::postgres::server::TestPostgres;
use idem_test_servers::postgres::TestPg;
use idem_tests::interrupt::held_in_body;

/// A store on a cluster of this test's own that tracks statements, through one connection, so
/// that every statement is prepared once in the warm-up and costs one round trip after it.
async fn target() -> Option<(TestPg, Idempotency)> {
    let server = TestPostgres::start_owned_with(&[
        "-c",
        "shared_preload_libraries=pg_stat_statements",
        "-c",
        "pg_stat_statements.track_utility=off",
    ])?;
    let target = TestPg::on_with(server, TestPg::pool_options().max_connections(1)).await;
    target
        .execute_raw("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .await;
    let idem = Idempotency::new(target.store.clone()).with_namespace("round-trips");
    Some((target, idem))
}

fn call(idem: &Idempotency, order: &str, amount: u32) -> Call {
    let key = idem.key("orders.create").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&(order, amount)).unwrap())
}

async fn create(idem: &Idempotency, order: &str, amount: u32) -> Result<(String, bool), Error> {
    let done = idem
        .run(call(idem, order, amount), async {
            Ok::<_, Error>(format!("created {order}"))
        })
        .await?;
    Ok((done.value, done.replayed))
}

async fn fail(idem: &Idempotency, order: &str) -> Error {
    idem.run(call(idem, order, 1), async {
        Err::<String, _>(Error::InvalidKey("declined".into()))
    })
    .await
    .unwrap_err()
}

/// A checkout in two steps, `charge` then `ledger`, that fails between them when `decline`;
/// `charges` counts the charge step's runs. Returns the attempt it ran as.
async fn checkout(
    idem: &Idempotency,
    order: &str,
    charges: &AtomicUsize,
    decline: bool,
) -> Result<u32, Error> {
    let done = idem
        .run(call(idem, order, 1), async {
            let charge = idem_core::step("charge", async {
                Ok::<_, Error>(format!("ch_{}", charges.fetch_add(1, Ordering::SeqCst)))
            })
            .await?;
            if decline {
                return Err(Error::InvalidKey("declined".into()));
            }
            idem_core::step("ledger", async {
                Ok::<_, Error>(format!("entry for {charge}"))
            })
            .await?;
            Ok(idem_core::context().expect("inside the body").attempt())
        })
        .await?;
    Ok(done.value)
}

/// Statements the server executed on the records table so far.
async fn executed(target: &TestPg) -> i64 {
    sqlx::query_scalar(
        "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements \
         WHERE query LIKE '%idem_records%' AND query NOT LIKE '%pg_stat_statements%'",
    )
    .fetch_one(&target.pool)
    .await
    .unwrap()
}

/// Runs `scenario` and returns how many statements it sent, after checking that the server
/// executed as many.
async fn count<F: Future<Output = ()>>(target: &TestPg, scenario: F) -> u64 {
    let (store_before, server_before) = (target.store.round_trips(), executed(target).await);
    scenario.await;
    let sent = target.store.round_trips() - store_before;
    let server = executed(target).await - server_before;
    assert_eq!(
        sent, server as u64,
        "the store's own count must agree with what the server executed"
    );
    sent
}

async fn each_call_takes_the_documented_round_trips() {
    let Some((target, idem)) = target().await else {
        return;
    };
    // Prepare every statement on the connection.
    create(&idem, "warm-1", 1).await.unwrap();
    fail(&idem, "warm-2").await;

    let sent = count(&target, async {
        assert!(!create(&idem, "o-1", 1).await.unwrap().1);
    })
    .await;
    assert_eq!(sent, 2, "fresh call: reserve + complete");

    let sent = count(&target, async {
        assert!(create(&idem, "o-1", 1).await.unwrap().1);
    })
    .await;
    assert_eq!(sent, 1, "replay: reserve finds the record");

    let sent = count(&target, async {
        let err = create(&idem, "o-1", 2).await.unwrap_err();
        assert!(matches!(err, Error::Mismatch { .. }), "{err:?}");
    })
    .await;
    assert_eq!(sent, 1, "mismatch: reserve finds the record");

    let sent = count(&target, async {
        let err = fail(&idem, "o-2").await;
        assert!(matches!(err, Error::InvalidKey(_)), "{err:?}");
    })
    .await;
    assert_eq!(sent, 2, "error: reserve + release");

    // A duplicate while the first call is held inside its body.
    let (finish, first) = held_in_body(&idem, call(&idem, "o-3", 1), "created o-3".to_owned()).await;
    let sent = count(&target, async {
        let err = create(&idem, "o-3", 1).await.unwrap_err();
        assert!(matches!(err, Error::InProgress { .. }), "{err:?}");
    })
    .await;
    assert_eq!(sent, 1, "conflict: reserve finds the reservation");
    finish.send(()).unwrap();
    assert!(!first.await.unwrap().unwrap().replayed);

    // A takeover of a reservation whose lease passed is the reservation itself.
    let key = call(&idem, "o-4", 1).key().clone();
    let now = SystemClock.now();
    let lease = Duration::from_secs(30);
    let claim = |at: Timestamp| {
        let record = InProgress::new(OwnerToken::generate(), Fingerprint::empty(), at + lease);
        Claim::new(record, at)
    };
    target.store.reserve(&key, &claim(now)).await.unwrap();
    let sent = count(&target, async {
        let took = target
            .store
            .reserve(&key, &claim(now + lease))
            .await
            .unwrap();
        assert!(matches!(took, Reservation::TookOver { .. }), "{took:?}");
    })
    .await;
    assert_eq!(sent, 1, "takeover: one statement");
}

async fn each_step_takes_one_round_trip_and_a_replayed_one_none() {
    let Some((target, idem)) = target().await else {
        return;
    };
    // Prepare every statement on the connection, the step's and the release's too.
    let warm_up = AtomicUsize::new(0);
    checkout(&idem, "warm-1", &warm_up, false).await.unwrap();
    fail(&idem, "warm-2").await;

    let charges = AtomicUsize::new(0);
    let sent = count(&target, async {
        assert_eq!(checkout(&idem, "s-1", &charges, false).await.unwrap(), 1);
    })
    .await;
    assert_eq!(
        sent,
        2 + 2,
        "fresh call with two steps: reserve + 2 steps + complete"
    );

    let sent = count(&target, async {
        let err = checkout(&idem, "s-2", &charges, true).await.unwrap_err();
        assert!(matches!(err, Error::InvalidKey(_)), "{err:?}");
    })
    .await;
    assert_eq!(
        sent,
        2 + 1,
        "error after a step: reserve + 1 step + release"
    );

    let sent = count(&target, async {
        assert_eq!(checkout(&idem, "s-2", &charges, false).await.unwrap(), 2);
    })
    .await;
    assert_eq!(
        sent,
        2 + 1,
        "takeover resuming after 1 step: reserve (with the step) + 1 step + complete"
    );
    assert_eq!(
        charges.load(Ordering::SeqCst),
        2,
        "the recorded charge was replayed, not run again"
    );
}

idem_tests::module_tests! {
    async each_call_takes_the_documented_round_trips,
    async each_step_takes_one_round_trip_and_a_replayed_one_none,
}
