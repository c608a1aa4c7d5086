//! The Redis store's reservation, one plain `SET ... NX GET`, where it meets what a script
//! used to judge: a reservation sent again, a crowd taking over one abandoned reservation, and
//! a server out of memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use futures_util::future::join_all;
use idem_core::{
    Call, Claim, Error, Fingerprint, Idempotency, InProgress, Key, OwnerToken, Record, Reservation,
    Store, StoreError, Timestamp, LEASE_GRACE,
};
use idem_tests::redis::server::TestRedis;
use idem_tests::redis::target::RedisTarget;

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

/// At `maxmemory` under `noeviction` Redis refuses every `SET` before looking at the key: a
/// replay and a duplicate are still answered, from a plain `GET`, and a new key fails closed
/// without running its body.
async fn a_full_server_still_answers_replays_and_duplicates() {
    let Some(redis) =
        TestRedis::start_with(&["--maxmemory", "4mb", "--maxmemory-policy", "noeviction"])
    else {
        return;
    };
    let target = RedisTarget::on(redis).await;
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

    let mut conn = target.raw().await;
    let filler = vec![b'x'; 64 * 1024];
    let mut full = false;
    for n in 0..1_000 {
        let written: idem_stores::redis::client::RedisResult<()> =
            idem_stores::redis::client::cmd("SET")
                .arg(format!("filler-{n}"))
                .arg(&filler)
                .query_async(&mut conn)
                .await;
        if let Err(error) = written {
            assert_eq!(error.code(), Some("OOM"), "{error:?}");
            full = true;
            break;
        }
    }
    assert!(full, "the server reached its maxmemory");

    let before = target.redis_store().round_trips();
    let (replay, sent) = target.client_commands(create("o-1")).await;
    let replay = replay.unwrap();
    assert!(replay.replayed);
    assert_eq!(replay.value, "created o-1");
    // MONITOR leaves out a command refused for memory: the store counts it.
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
        "nothing ran on the full server"
    );
}

idem_tests::backend_tests! {
    async a_reserve_sent_again_by_its_owner_is_its_reservation,
    async a_crowd_takes_an_abandoned_reservation_over_once,
    async a_full_server_still_answers_replays_and_duplicates,
}
