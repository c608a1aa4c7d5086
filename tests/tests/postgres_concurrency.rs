//! Many callers of one key, through two independent stores (two service instances, each with a pool of its own): the body
//! runs exactly once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use idem_core::{Call, Error, Fingerprint, Idempotency};
use idem_tests::crowd;
use idem_tests::postgres::TestPg;

const CALLERS: usize = 1_000;

/// A second store on the same table, through a pool of its own.
async fn another_store(target: &TestPg) -> idem_stores::postgres::PostgresStore {
    let pool = TestPg::pool_options().connect(&target.url).await.unwrap();
    idem_stores::postgres::PostgresStore::new(pool)
}

async fn a_thousand_callers_on_two_stores_run_the_body_once() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let second = another_store(&target).await;
    let statements = || target.store.round_trips() + second.round_trips();
    let before = statements();
    let instances = [
        Idempotency::new(target.store.clone()),
        Idempotency::new(second.clone()),
    ];
    let crowd = crowd::in_flight(instances, CALLERS).await;
    // A loser whose statement started before the winner's insert committed cannot see that
    // row, and sends the statement once more.
    let resent = (statements() - before).saturating_sub(CALLERS as u64);
    eprintln!("{CALLERS} reservations took {resent} statements more");
    assert!(resent < CALLERS as u64, "{resent}");
    crowd.finish().await;
}

/// Callers released at once on keys no one holds, so that losers' statements start before the
/// winner's insert commits: every key still runs once.
async fn races_on_fresh_keys_run_each_body_once() {
    const KEYS: usize = 200;
    const PER_KEY: usize = 8;
    let Some(target) = TestPg::start().await else {
        return;
    };
    let second = another_store(&target).await;
    let statements = || target.store.round_trips() + second.round_trips();
    let instances = [
        Idempotency::new(target.store.clone()),
        Idempotency::new(second.clone()),
    ];
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
    let before = statements();
    for key in 0..KEYS {
        let start = Arc::new(tokio::sync::Barrier::new(PER_KEY));
        let callers: Vec<_> = (0..PER_KEY)
            .map(|caller| {
                let idem = instances[caller % 2].clone();
                let (runs, start) = (runs.clone(), start.clone());
                tokio::spawn(async move {
                    let order = format!("fresh-{key}");
                    let call = Call::new(
                        idem.key("orders.create").part(&order).finish().unwrap(),
                        Fingerprint::of(&order).unwrap(),
                    );
                    start.wait().await;
                    idem.run(call, async {
                        runs[key].fetch_add(1, Ordering::SeqCst);
                        Ok::<_, Error>(order.clone())
                    })
                    .await
                })
            })
            .collect();
        for caller in callers {
            match caller.await.unwrap() {
                Ok(_) | Err(Error::InProgress { .. }) => {}
                Err(other) => panic!("a caller got {other:?}"),
            }
        }
    }
    for (key, ran) in runs.iter().enumerate() {
        assert_eq!(ran.load(Ordering::SeqCst), 1, "key {key}");
    }
    let sent = statements() - before;
    let resent = sent.saturating_sub((KEYS * (PER_KEY + 1)) as u64);
    eprintln!(
        "{} reservations on {KEYS} fresh keys: {sent} statements, {resent} sent again",
        KEYS * PER_KEY
    );
}

idem_tests::backend_tests! {
    async a_thousand_callers_on_two_stores_run_the_body_once,
    async races_on_fresh_keys_run_each_body_once,
}
