//! How many requests each case costs on DynamoDB, counted on the wire by an interceptor on the
//! store's client: fresh 2, replay 1, conflict 1, mismatch 1, error with release 2, one more
//! per recorded step and none per replayed step, and a release that keeps steps 2.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use idem_core::store::{Claim, InProgress, OwnerToken, Reservation, Store, Timestamp};
use idem_core::{step, Answered, Call, Clock, Error, Fingerprint, Idempotency, ManualClock};
use idem_core::SystemClock;
use idem_tests::inventory::SECOND;
use idem_test_servers::dynamodb::TestDynamo;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

fn call(idem: &Idempotency, order: &str, amount: u64) -> Call {
    let key = idem.key("charge").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&(order, amount)).unwrap())
}

/// What `action` returned, and the operations `db` was sent while it ran.
async fn sending<T>(db: &TestDynamo, action: impl Future<Output = T>) -> (T, Vec<String>) {
    let before = db.requests.count();
    let output = action.await;
    (output, db.requests.operations_since(before))
}

fn ops(list: &[&str]) -> Vec<String> {
    list.iter().map(|op| op.to_string()).collect()
}

/// Starts a call for `order` whose body returns `value` once the returned sender fires, and
/// waits until the body runs, so the key is held in progress.
async fn start_and_hold(
    idem: &Idempotency,
    order: &str,
    value: u64,
) -> (
    oneshot::Sender<()>,
    JoinHandle<Result<Answered<u64>, Error>>,
) {
    let (started_tx, started_rx) = oneshot::channel();
    let (finish_tx, finish_rx) = oneshot::channel::<()>();
    let idem = idem.clone();
    let call = call(&idem, order, 10);
    let first = tokio::spawn(async move {
        idem.run(call, async move {
            started_tx.send(()).unwrap();
            finish_rx.await.unwrap();
            Ok::<_, Error>(value)
        })
        .await
    });
    started_rx.await.unwrap();
    (finish_tx, first)
}

/// Reserves the key of `order`'s charge straight through `db`'s store, leased for thirty
/// seconds from now; returns the call, its owner and that now.
async fn reserved(db: &TestDynamo, order: &str) -> (Call, OwnerToken, Timestamp) {
    let call = call(&Idempotency::from_arc(db.store.clone()), order, 10);
    let now = Clock::now(&SystemClock);
    let owner = OwnerToken::generate();
    let record = InProgress::new(owner.clone(), *call.fingerprint().unwrap(), now + 30 * SECOND)
        .with_fencing_token(now.as_millis() * 1000);
    let claim = Claim::new(record, now);
    assert_eq!(
        db.store.reserve(call.key(), &claim).await.unwrap(),
        Reservation::Reserved(claim.record().clone())
    );
    (call, owner, now)
}

/// Renews `call`'s lease for `owner`, a minute past `now`: one update, with steps or without.
async fn renewal_costs_one_update_on(db: &TestDynamo, call: &Call, owner: &OwnerToken, now: Timestamp) {
    let (renewed, sent) = sending(db, db.store.renew(call.key(), owner, now + 60 * SECOND)).await;
    renewed.unwrap();
    assert_eq!(sent, ["UpdateItem"]);
}

async fn fresh_call_costs_two_and_replay_one() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    let runs = AtomicUsize::new(0);
    let charge = || async {
        runs.fetch_add(1, Ordering::SeqCst);
        Ok::<_, Error>("receipt-1".to_string())
    };

    let (fresh, sent) = sending(&db, idem.run(call(&idem, "o-1", 10), charge())).await;
    assert!(!fresh.unwrap().replayed);
    assert_eq!(sent, ["PutItem", "PutItem"], "fresh: reserve + complete");

    let (replay, sent) = sending(&db, idem.run(call(&idem, "o-1", 10), charge())).await;
    let replay = replay.unwrap();
    assert!(replay.replayed);
    assert_eq!(replay.value, "receipt-1");
    assert_eq!(sent, ["PutItem"], "replay: the failed reserve returns the record");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let (mismatch, sent) = sending(&db, idem.run(call(&idem, "o-1", 99), charge())).await;
    let mismatch = mismatch.unwrap_err();
    assert!(matches!(mismatch, Error::Mismatch { .. }), "{mismatch:?}");
    assert_eq!(sent, ["PutItem"], "mismatch: one request");
}

async fn conflict_costs_one() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    let (finish_tx, first) = start_and_hold(&idem, "o-2", 1).await;

    let duplicate = idem.run(call(&idem, "o-2", 10), async { Ok::<_, Error>(2u64) });
    let (duplicate, sent) = sending(&db, duplicate).await;
    let duplicate = duplicate.unwrap_err();
    assert!(matches!(duplicate, Error::InProgress { .. }), "{duplicate:?}");
    assert_eq!(sent, ["PutItem"], "conflict: one request");

    finish_tx.send(()).unwrap();
    assert_eq!(first.await.unwrap().unwrap().value, 1);
}

async fn error_with_release_costs_two() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());

    let declined = idem.run(call(&idem, "o-3", 10), async {
        Err::<u64, _>(Error::InvalidKey("card declined".into()))
    });
    let (declined, sent) = sending(&db, declined).await;
    assert!(matches!(declined, Err(Error::InvalidKey(_))), "{declined:?}");
    assert_eq!(sent, ["PutItem", "DeleteItem"], "error: reserve + release");

    let retry = idem
        .run(call(&idem, "o-3", 10), async { Ok::<_, Error>(3u64) })
        .await
        .unwrap();
    assert!(!retry.replayed, "the released key runs again");
}

async fn requests_ask_for_what_the_protocol_needs() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    let call = call(&idem, "o-4", 10);
    let before = db.requests.count();
    idem.run(call.clone(), async { Ok::<_, Error>(4u64) })
        .await
        .unwrap();
    let sent = db.requests.since(before);
    let reserve = &sent[0].body;
    assert!(
        reserve.contains(r#""ReturnValuesOnConditionCheckFailure":"ALL_OLD""#),
        "{reserve}"
    );
    assert!(
        !reserve.contains(r#""ReturnValues""#),
        "a put on a free key needs no old item back: {reserve}"
    );
    assert!(reserve.contains("ConditionExpression"), "{reserve}");
    let complete = &sent[1].body;
    assert!(complete.contains("ConditionExpression"), "{complete}");

    let before = db.requests.count();
    db.store.get(call.key()).await.unwrap().expect("the record");
    let get = db.requests.since(before);
    assert_eq!(get.len(), 1);
    assert_eq!(get[0].operation, "GetItem");
    assert!(
        get[0].body.contains(r#""ConsistentRead":true"#),
        "{}",
        get[0].body
    );
}

async fn renewal_costs_one_update() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let (call, owner, now) = reserved(&db, "o-5").await;
    renewal_costs_one_update_on(&db, &call, &owner, now).await;
}

async fn a_waiting_duplicate_polls_with_small_reads() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    let (finish_tx, first) = start_and_hold(&idem, "o-6", 6).await;
    let before = db.requests.count();
    let waiter = {
        let idem = idem.clone();
        let call = call(&idem, "o-6", 10).with_wait(std::time::Duration::from_secs(10));
        tokio::spawn(async move { idem.run(call, async { Ok::<_, Error>(7u64) }).await })
    };
    // Let the waiter poll twice, then finish the first call.
    let polled = async {
        while db
            .requests
            .operations_since(before)
            .iter()
            .filter(|op| *op == "GetItem")
            .count()
            < 2
        {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), polled)
        .await
        .expect("a waiting duplicate polls the record with GetItem");
    finish_tx.send(()).unwrap();
    let first = first.await.unwrap().unwrap();
    let waited = waiter.await.unwrap().unwrap();
    assert_eq!(waited.value, first.value);
    assert!(waited.replayed);

    let sent = db.requests.since(before);
    let polls = sent.iter().filter(|r| r.operation == "GetItem");
    for poll in polls {
        assert!(poll.body.contains("ProjectionExpression"), "{}", poll.body);
        assert!(
            poll.body.contains(r#""ConsistentRead":true"#),
            "{}",
            poll.body
        );
    }
    let writes: Vec<_> = sent
        .iter()
        .filter(|r| r.operation == "PutItem")
        .map(|r| r.operation.as_str())
        .collect();
    assert_eq!(
        writes,
        ["PutItem", "PutItem", "PutItem"],
        "waiter reserve, first's complete, waiter's reserve: {sent:?}"
    );
}

async fn each_recorded_step_costs_one_update() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    let before = db.requests.count();
    let done = idem
        .run(call(&idem, "o-7", 10), async {
            let charge = step("charge", async { Ok::<_, Error>("ch_1".to_string()) }).await?;
            let entry = step("ledger", async { Ok::<_, Error>(7u64) }).await?;
            Ok::<_, Error>((charge, entry))
        })
        .await
        .unwrap();
    assert_eq!(done.value, ("ch_1".to_string(), 7));
    assert_eq!(
        db.requests.operations_since(before),
        ops(&["PutItem", "UpdateItem", "UpdateItem", "PutItem"]),
        "two steps: reserve + one update per step + complete"
    );
}

async fn a_takeover_replays_a_recorded_step_at_no_cost() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let clock = ManualClock::new();
    let idem = Idempotency::from_arc(db.store.clone()).with_clock(clock.clone());
    let charges = Arc::new(AtomicUsize::new(0));
    let recorded = Arc::new(tokio::sync::Semaphore::new(0));
    let checkout = |hang: bool| {
        let (idem, charges, recorded) = (idem.clone(), charges.clone(), recorded.clone());
        async move {
            idem.run(call(&idem, "o-8", 10), async {
                let charge = step("charge", async {
                    let run = charges.fetch_add(1, Ordering::SeqCst) + 1;
                    Ok::<_, Error>(format!("ch_{run}"))
                })
                .await?;
                if hang {
                    recorded.add_permits(1);
                    std::future::pending::<()>().await;
                }
                let entry = step("ledger", async { Ok::<_, Error>(7u64) }).await?;
                Ok::<_, Error>((charge, entry))
            })
            .await
        }
    };
    let start = db.requests.count();
    let crashed = tokio::spawn(checkout(true));
    tokio::time::timeout(std::time::Duration::from_secs(10), recorded.acquire())
        .await
        .expect("the first attempt records its charge")
        .unwrap()
        .forget();
    crashed.abort();
    assert!(crashed.await.is_err(), "the first attempt was dropped");
    assert_eq!(
        db.requests.operations_since(start),
        ops(&["PutItem", "UpdateItem"]),
        "the first attempt: reserve + its charge step"
    );

    clock.advance(std::time::Duration::from_secs(31));
    let before = db.requests.count();
    let resumed = checkout(false).await.unwrap();
    assert_eq!(
        resumed.value,
        ("ch_1".to_string(), 7),
        "the charge is replayed"
    );
    assert_eq!(charges.load(Ordering::SeqCst), 1);
    assert_eq!(
        db.requests.operations_since(before),
        ops(&["PutItem", "UpdateItem", "UpdateItem", "PutItem"]),
        "takeover (failed put + update returning the steps) + the ledger step + complete"
    );
    let takeover = &db.requests.since(before)[1].body;
    assert!(
        takeover.contains(r#""ReturnValues":"ALL_NEW""#),
        "the takeover's answer carries the steps: {takeover}"
    );
}

async fn an_error_after_a_step_keeps_the_record_in_two_requests() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    let call = call(&idem, "o-9", 10);
    let before = db.requests.count();
    let declined = idem
        .run(call.clone(), async {
            step("charge", async { Ok::<_, Error>(1u64) }).await?;
            Err::<u64, _>(Error::InvalidKey("card declined".into()))
        })
        .await
        .unwrap_err();
    assert!(matches!(declined, Error::InvalidKey(_)), "{declined:?}");
    assert_eq!(
        db.requests.operations_since(before),
        ops(&["PutItem", "UpdateItem", "DeleteItem", "UpdateItem"]),
        "reserve + step + a delete refused for the steps + the update ending the lease"
    );
    match db.store.get(call.key()).await.unwrap() {
        Some(idem_core::store::Record::InProgress(held)) => assert!(held.is_released(), "{held:?}"),
        other => panic!("the record with its step stays, found {other:?}"),
    }
}

async fn a_renewal_with_steps_costs_one_update() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let (call, owner, now) = reserved(&db, "o-10").await;
    db.store
        .record_step(
            call.key(),
            &owner,
            "charge",
            b"1",
            now + 3600 * SECOND,
        )
        .await
        .unwrap();
    renewal_costs_one_update_on(&db, &call, &owner, now).await;
}

idem_tests::module_tests! {
    async fresh_call_costs_two_and_replay_one,
    async conflict_costs_one,
    async error_with_release_costs_two,
    async requests_ask_for_what_the_protocol_needs,
    async renewal_costs_one_update,
    async a_waiting_duplicate_polls_with_small_reads,
    async each_recorded_step_costs_one_update,
    async a_takeover_replays_a_recorded_step_at_no_cost,
    async an_error_after_a_step_keeps_the_record_in_two_requests,
    async a_renewal_with_steps_costs_one_update,
}
