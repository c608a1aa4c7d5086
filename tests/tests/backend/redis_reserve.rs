//! The Redis store's reservation, one plain `SET ... NX GET`, where it meets what a script
//! used to judge: a reservation sent again, a crowd taking over one abandoned reservation, a
//! server that refuses writes; and the scripts on a key without expiry.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use futures_util::future::join_all;
use idem_core::{
    store::{
        Claim, Completed, InProgress, Outcome, OwnerToken, Record, Reservation, Store, Timestamp,
        LEASE_GRACE,
    },
    Call, Error, Fingerprint, Idempotency, Key, StoreError,
};
use idem_stores::redis::client::aio::MultiplexedConnection;
use idem_stores::redis::client::{cmd, RedisResult};
use idem_test_servers::redis::server::TestRedis;
use idem_test_servers::redis::target::RedisTarget;

fn key(name: &str) -> Key {
    Idempotency::new(idem_stores::memory::MemoryStore::new())
        .key("orders.create")
        .part(name)
        .finish()
        .unwrap()
}

fn claim(owner: &str, fingerprint: &Fingerprint, now: Timestamp, lease: Duration) -> Claim {
    let record = InProgress::new(
        OwnerToken::from(owner.to_owned()),
        *fingerprint,
        now + lease,
    )
    .with_fencing_token(now.as_millis() * 1_000);
    Claim::new(record, now)
}

fn now() -> Timestamp {
    Timestamp::from_system_time(SystemTime::now())
}

/// A reserve whose reply was lost is sent again by the same owner: it gets its reservation
/// back, each time with one plain command.
async fn a_reserve_sent_again_by_its_owner_is_its_reservation() {
    let Some(target) = RedisTarget::on_owned().await else {
        return;
    };
    let store = target.redis_store();
    let key = key("again");
    let claim = claim(
        "owner-1",
        &Fingerprint::empty(),
        now(),
        Duration::from_secs(30),
    );
    for attempt in 0..3 {
        let (reservation, sent) = target.client_commands(store.reserve(&key, &claim)).await;
        assert_eq!(
            reservation.unwrap(),
            Reservation::Reserved(claim.record().clone()),
            "attempt {attempt}"
        );
        assert_eq!(sent, ["SET"], "attempt {attempt}");
    }
}

/// A hundred callers on two stores find one abandoned reservation at once: exactly one takes
/// it over, and every other is shown the winner's reservation.
async fn a_crowd_takes_an_abandoned_reservation_over_once() {
    let Some(target) = RedisTarget::on_owned().await else {
        return;
    };
    let stores = [target.redis_store().clone(), target.another_store().await];
    let key = key("abandoned");
    let ours = Fingerprint::of(&"ours").unwrap();
    let theirs = Fingerprint::of(&"theirs").unwrap();
    let start = now();
    let lease = Duration::from_secs(1);
    let first = claim("crashed", &ours, start, lease);
    assert!(matches!(
        stores[0].reserve(&key, &first).await.unwrap(),
        Reservation::Reserved(_)
    ));

    // On the callers' clock the reservation is abandoned; Redis still holds it.
    let later = start + lease + LEASE_GRACE + Duration::from_millis(1);
    let claims: Vec<Claim> = (0..100)
        .map(|n| {
            let fingerprint = if n % 2 == 0 { &ours } else { &theirs };
            claim(
                &format!("taker-{n}"),
                fingerprint,
                later,
                Duration::from_secs(30),
            )
        })
        .collect();
    let answers = join_all(
        claims
            .iter()
            .enumerate()
            .map(|(n, claim)| stores[n % 2].reserve(&key, claim)),
    )
    .await;

    let mut winners = Vec::new();
    let mut shown = Vec::new();
    for answer in answers {
        match answer.unwrap() {
            Reservation::TookOver { previous, record } => {
                assert_eq!(previous.as_str(), "crashed");
                winners.push(record);
            }
            Reservation::Existing(Record::InProgress(held)) => shown.push(held),
            other => panic!("unexpected answer: {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one caller takes the key over");
    let winner = &winners[0];
    assert!(winner.fencing_token() > first.record().fencing_token());
    assert_eq!(shown.len(), 99);
    assert!(shown.iter().all(|held| held == winner), "{shown:?}");
    assert_eq!(
        stores[0].get(&key).await.unwrap(),
        Some(Record::InProgress(winner.clone()))
    );
}

/// A server that refuses writes refuses every `SET` before looking at the key: a replay and a
/// duplicate are still answered, from a plain `GET`, and a new key fails closed without running
/// its body. `refuse` makes the server refuse writes.
async fn answers_replays_while_writes_are_refused<F, Fut>(target: RedisTarget, refuse: F)
where
    F: FnOnce(MultiplexedConnection) -> Fut,
    Fut: Future<Output = ()>,
{
    let idem = Idempotency::new(target.redis_store().clone());
    let runs = AtomicUsize::new(0);
    let call = |order: &str| {
        let key = idem.key("orders.create").part(order).finish().unwrap();
        Call::new(key, Fingerprint::of(&order).unwrap())
    };
    let create = |order: &'static str| {
        let runs = &runs;
        idem.run(call(order), async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(format!("created {order}"))
        })
    };
    assert!(!create("o-1").await.unwrap().replayed);
    let running = key("running");
    let holder = claim(
        "holder",
        &Fingerprint::empty(),
        now(),
        Duration::from_secs(60),
    );
    target
        .redis_store()
        .reserve(&running, &holder)
        .await
        .unwrap();

    refuse(target.raw().await).await;

    let before = target.redis_store().round_trips();
    let (replay, sent) = target.client_commands(create("o-1")).await;
    let replay = replay.unwrap();
    assert!(replay.replayed);
    assert_eq!(replay.value, "created o-1");
    // MONITOR leaves out a command refused before it ran: the store counts it.
    assert_eq!(sent, ["GET"]);
    assert_eq!(
        target.redis_store().round_trips() - before,
        2,
        "the refused SET, then the read"
    );

    let duplicate = claim(
        "duplicate",
        &Fingerprint::empty(),
        now(),
        Duration::from_secs(60),
    );
    assert_eq!(
        target
            .redis_store()
            .reserve(&running, &duplicate)
            .await
            .unwrap(),
        Reservation::Existing(Record::InProgress(holder.record().clone()))
    );

    let err = create("o-2").await.unwrap_err();
    assert!(matches!(err, Error::Store { .. }), "{err:?}");
    let refused = target
        .redis_store()
        .reserve(&key("fresh"), &duplicate)
        .await
        .unwrap_err();
    assert!(matches!(refused, StoreError::Backend(_)), "{refused:?}");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "nothing ran while writes were refused"
    );
}

/// Sets `setting` to `value` on the server, and checks that a write is then refused with
/// `code`.
async fn refuse_writes(mut conn: MultiplexedConnection, setting: &str, value: &str, code: &str) {
    let () = cmd("CONFIG")
        .arg("SET")
        .arg(setting)
        .arg(value)
        .query_async(&mut conn)
        .await
        .unwrap();
    let refused: RedisResult<()> = cmd("SET")
        .arg("probe")
        .arg("1")
        .query_async(&mut conn)
        .await;
    assert_eq!(refused.unwrap_err().code(), Some(code));
}

/// At `maxmemory` under `noeviction` (`OOM`): a `maxmemory` below what the server already
/// holds, so that every write is refused however memory moves meanwhile.
async fn a_full_server_still_answers_replays_and_duplicates() {
    let Some(redis) = TestRedis::start_with(&["--maxmemory-policy", "noeviction"]) else {
        return;
    };
    answers_replays_while_writes_are_refused(RedisTarget::on(redis).await, |conn| {
        refuse_writes(conn, "maxmemory", "1", "OOM")
    })
    .await;
}

/// With `min-replicas-to-write` and no replica (`NOREPLICAS`).
async fn a_server_short_of_replicas_still_answers_replays_and_duplicates() {
    let Some(target) = RedisTarget::on_owned().await else {
        return;
    };
    answers_replays_while_writes_are_refused(target, |conn| {
        refuse_writes(conn, "min-replicas-to-write", "1", "NOREPLICAS")
    })
    .await;
}

/// A key whose expiry an operator removed (`PERSIST`) keeps none: the scripts estimate the
/// caller's clock from the key's remaining time, and without one they set no expiry rather than
/// guess one from the server's clock.
async fn a_key_without_expiry_keeps_none() {
    let Some(target) = RedisTarget::on_owned().await else {
        return;
    };
    let store = target.redis_store();
    let key = key("persisted");
    let start = now();
    let claim = claim(
        "owner-1",
        &Fingerprint::empty(),
        start,
        Duration::from_secs(30),
    );
    let owner = claim.record().owner().clone();
    store.reserve(&key, &claim).await.unwrap();
    let mut conn = target.raw().await;
    let redis_key = store.redis_key(&key);
    let persisted: i64 = cmd("PERSIST")
        .arg(&redis_key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(persisted, 1);
    let pttl = |mut conn: MultiplexedConnection| {
        let redis_key = redis_key.clone();
        async move {
            let pttl: i64 = cmd("PTTL")
                .arg(redis_key)
                .query_async(&mut conn)
                .await
                .unwrap();
            pttl
        }
    };

    let lease = start + Duration::from_secs(60);
    store.renew(&key, &owner, lease).await.unwrap();
    assert_eq!(pttl(conn.clone()).await, -1, "after a renewal");
    store
        .record_step(
            &key,
            &owner,
            "charge",
            b"1",
            start + Duration::from_secs(3600),
        )
        .await
        .unwrap();
    assert_eq!(pttl(conn.clone()).await, -1, "after a step");
    let Some(Record::InProgress(held)) = store.get(&key).await.unwrap() else {
        panic!("the reservation is there");
    };
    assert_eq!(held.lease_until(), lease);
    assert_eq!(held.steps().get("charge"), Some(&b"1"[..]));

    let completed = Completed::new(
        Fingerprint::empty(),
        Outcome::ok(b"1".to_vec()),
        start + Duration::from_secs(60),
    );
    store.complete(&key, &owner, &completed).await.unwrap();
    assert_eq!(pttl(conn.clone()).await, -1, "after completion");
    assert_eq!(
        store.get(&key).await.unwrap(),
        Some(Record::Completed(completed))
    );
}

idem_tests::module_tests! {
    async a_reserve_sent_again_by_its_owner_is_its_reservation,
    async a_crowd_takes_an_abandoned_reservation_over_once,
    async a_full_server_still_answers_replays_and_duplicates,
    async a_server_short_of_replicas_still_answers_replays_and_duplicates,
    async a_key_without_expiry_keeps_none,
}
