//! Fault tests against a PostgreSQL cluster the test owns: killed mid-call, restarted under a
//! live pool, and a statement that outlasts its timeout.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idem_core::{Error, Idempotency, ManualClock};
use idem_stores::postgres::RequestFailed;
use idem_test_servers::postgres::server::TestPostgres;
use idem_test_servers::postgres::TestPg;
use idem_tests::interrupt::{back_up_with_the_reservation, create, killed_mid_body};
use sqlx::postgres::PgConnectOptions;

/// A store on a cluster this test owns, whose pool gives up on a dead server within a second.
async fn owned_target() -> Option<TestPg> {
    let server = TestPostgres::start_owned()?;
    let options = TestPg::pool_options().acquire_timeout(Duration::from_secs(1));
    Some(TestPg::on_with(server, options).await)
}

fn request_failed(err: &Error) -> &RequestFailed {
    let Error::Store { source, .. } = err else {
        panic!("expected Error::Store, got {err:?}")
    };
    source
        .downcast_ref::<RequestFailed>()
        .expect("sqlx's error, typed")
}

async fn server_killed_between_reserve_and_complete() {
    let Some(mut target) = owned_target().await else {
        return;
    };
    let clock = ManualClock::new();
    let idem = Idempotency::new(target.store.clone()).with_clock(clock.clone());
    let runs = Arc::new(AtomicUsize::new(0));

    killed_mid_body(&idem, &runs, || target.server.kill()).await;

    // While the server is down, calls fail closed without running the body.
    let err = create(&idem, "o-1", &runs).await.unwrap_err();
    let failed = request_failed(&err);
    assert_eq!(failed.operation(), "reserve");
    assert!(
        matches!(
            failed.sqlx_error(),
            sqlx::Error::PoolTimedOut | sqlx::Error::Io(_)
        ),
        "{:?}",
        failed.sqlx_error()
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    target.server.restart_after_kill();
    back_up_with_the_reservation(&idem, &clock, &runs).await;
}

async fn pool_reconnects_after_a_restart() {
    let Some(mut target) = owned_target().await else {
        return;
    };
    let idem = Idempotency::new(target.store.clone());
    let runs = AtomicUsize::new(0);
    assert!(!create(&idem, "before", &runs).await.unwrap());

    for round in 0..3 {
        target.server.kill();
        let err = create(&idem, "during", &runs).await.unwrap_err();
        assert!(matches!(err, Error::Store { .. }), "{err:?}");
        target.server.restart_after_kill();
        let order = format!("after-{round}");
        assert!(!create(&idem, &order, &runs).await.unwrap());
        assert!(create(&idem, &order, &runs).await.unwrap());
    }
    assert_eq!(runs.load(Ordering::SeqCst), 4);
    assert!(create(&idem, "before", &runs).await.unwrap(), "data kept");
}

async fn a_statement_timeout_is_a_backend_error() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let options: PgConnectOptions = target.url.parse().unwrap();
    let pool = TestPg::pool_options()
        .connect_with(options.options([("statement_timeout", "200ms")]))
        .await
        .unwrap();
    let store = idem_stores::postgres::PostgresStore::new(pool);
    let idem = Idempotency::new(store);
    let runs = AtomicUsize::new(0);
    assert!(!create(&idem, "locked", &runs).await.unwrap());

    // Another session holds the row locked, so the reservation waits past its timeout.
    let mut locker = target.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM idem_records WHERE key LIKE '%locked' FOR UPDATE")
        .execute(&mut *locker)
        .await
        .unwrap();
    let err = create(&idem, "locked", &runs).await.unwrap_err();
    let failed = request_failed(&err);
    assert_eq!(failed.operation(), "reserve");
    let sqlx::Error::Database(database) = failed.sqlx_error() else {
        panic!("a database error, got {:?}", failed.sqlx_error())
    };
    assert_eq!(database.code().as_deref(), Some("57014"), "query_canceled");
    locker.rollback().await.unwrap();
    assert!(create(&idem, "locked", &runs).await.unwrap());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

idem_tests::module_tests! {
    async server_killed_between_reserve_and_complete,
    async pool_reconnects_after_a_restart,
    async a_statement_timeout_is_a_backend_error,
}
