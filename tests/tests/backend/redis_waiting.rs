//! Waiting on Redis: what callers waiting for one in-flight key cost the server, woken by
//! publication or polling; the eviction-policy check; `WAIT` for replicas.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use idem_conformance::{Intercepted, Interceptor};
use idem_core::{
    step,
    store::{Claim, InProgress, OwnerToken, Reservation, Store, Timestamp},
    Call, Error, Fingerprint, Idempotency, Key, StoreError,
};
use idem_stores::redis::client::aio::ConnectionManager;
use idem_stores::redis::client::{self as redis, Client};
use idem_stores::redis::{NotReplicated, RedisStore};
use idem_test_servers::redis::server::TestRedis;
use idem_test_servers::redis::target::RedisTarget;
use tokio::sync::{oneshot, Semaphore};

const WAITERS: usize = 100;
/// How long the first call holds the key while the waiters wait.
const HELD_FOR: Duration = Duration::from_secs(2);

fn call(idem: &Idempotency, order: &str) -> Call {
    let key = idem.key("orders.create").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(order).unwrap())
}

/// The server's command counts while `WAITERS` callers wait `HELD_FOR` for one running call
/// through `store`, and check that each of them got its outcome.
async fn cost_of_waiting(
    target: &RedisTarget,
    store: impl Store,
    order: &str,
) -> Vec<(String, u64)> {
    let idem = Idempotency::new(store).with_namespace("waiting");
    let (started_tx, started) = oneshot::channel();
    let (finish, finish_rx) = oneshot::channel::<()>();
    let first = tokio::spawn({
        let (idem, call) = (idem.clone(), call(&idem, order));
        async move {
            idem.run(call, async move {
                started_tx.send(()).unwrap();
                finish_rx.await.unwrap();
                Ok::<_, Error>("created".to_owned())
            })
            .await
        }
    });
    started.await.unwrap();
    target.reset_command_stats().await;
    let parked = Arc::new(Semaphore::new(0));
    let waiters: Vec<_> = (0..WAITERS)
        .map(|_| {
            let (idem, parked) = (idem.clone(), parked.clone());
            let call = call(&idem, order).with_wait(Duration::from_secs(30));
            tokio::spawn(async move {
                parked.add_permits(1);
                idem.run(call, async { Ok::<_, Error>("ran again".to_owned()) })
                    .await
            })
        })
        .collect();
    parked.acquire_many(WAITERS as u32).await.unwrap().forget();
    // Letting time pass is what is measured: the key stays in progress this long.
    tokio::time::sleep(HELD_FOR).await;
    finish.send(()).unwrap();
    assert!(!first.await.unwrap().unwrap().replayed);
    for waiter in waiters {
        let waited = waiter
            .await
            .unwrap()
            .expect("every waiter gets the outcome");
        assert_eq!(waited.value, "created");
        assert!(waited.replayed);
    }
    target.command_calls().await
}

fn calls(commands: &[(String, u64)], name: &str) -> u64 {
    commands
        .iter()
        .filter(|(command, _)| command == name)
        .map(|(_, calls)| calls)
        .sum()
}

/// The Redis store without its own `changed`: a copy of `Store::changed`'s default, which
/// sleeps 25 ms and has the engine reserve again (a `SET`), as the store did before it
/// subscribed.
struct DefaultWaiting(RedisStore);

#[async_trait::async_trait]
impl Interceptor for DefaultWaiting {
    fn inner(&self) -> &dyn Store {
        &self.0
    }

    async fn changed(&self, _: &Key, timeout: Duration) -> Result<(), StoreError> {
        tokio::time::sleep(timeout.min(Duration::from_millis(25))).await;
        Ok(())
    }
}

/// 100 callers waiting two seconds for one key: with the store's subscription each reserves
/// twice (a `SET` before and one after its wake-up) and runs no script; polling runs reads
/// (`GET`) all along, and the trait's default poll reserves again every 25 ms. The table is the
/// measurement; the assertions are the wake-up's promise.
///
/// `INFO commandstats` counts the commands scripts run inside the server too: the complete
/// script's own `GET` and `SET` are in the `get` and `set` rows, and in the bounds below.
async fn waiters_are_woken_by_publication_not_polling() {
    let Some(target) = RedisTarget::on_owned().await else {
        return;
    };
    let subscribed = cost_of_waiting(&target, target.another_store().await, "o-1").await;
    let polled = cost_of_waiting(&target, polling_store(&target).await, "o-2").await;
    let default = Intercepted(DefaultWaiting(target.another_store().await));
    let defaulted = cost_of_waiting(&target, default, "o-3").await;

    eprintln!("{WAITERS} callers waiting {HELD_FOR:?} for one key, commands on the server:");
    eprintln!("| command | woken by publication | polling reads | default 25 ms poll |");
    eprintln!("|---|---|---|---|");
    let names = [
        "set",
        "get",
        "evalsha",
        "subscribe",
        "unsubscribe",
        "publish",
    ];
    for name in names {
        let counts = [&subscribed, &polled, &defaulted].map(|c| calls(c, name));
        eprintln!("| {name} | {} | {} | {} |", counts[0], counts[1], counts[2]);
    }
    let total = |commands: &[(String, u64)]| commands.iter().map(|(_, n)| n).sum::<u64>();
    eprintln!(
        "| all, scripts' own commands included | {} | {} | {} |",
        total(&subscribed),
        total(&polled),
        total(&defaulted)
    );

    assert_eq!(
        calls(&subscribed, "subscribe"),
        1,
        "one subscription for all waiters"
    );
    let reserves = calls(&subscribed, "set");
    assert!(
        (WAITERS as u64..=2 * WAITERS as u64 + 5).contains(&reserves),
        "each waiter reserves (SET) before and after its wake-up, got {reserves} SETs: {subscribed:?}"
    );
    let scripts = calls(&subscribed, "evalsha") + calls(&subscribed, "eval");
    assert!(
        scripts <= 5,
        "a waiter's reserve and its replay run no script; only the first call's complete (or \
         a release, a renewal) does, got {scripts} scripts: {subscribed:?}"
    );
    assert!(
        calls(&subscribed, "get") < calls(&polled, "get"),
        "publication must spare the polling reads: {subscribed:?} vs {polled:?}"
    );
}

/// A store on `target`'s server that polls the record while waiting: it has no client to
/// subscribe with.
async fn polling_store(target: &RedisTarget) -> RedisStore {
    let conn = ConnectionManager::new(Client::open(target.url()).unwrap())
        .await
        .unwrap();
    RedisStore::connection_builder(conn)
        .prefix(target.prefix())
        .connect()
        .await
        .unwrap()
}

/// A caller waiting for a call that fails after a step is woken when the key is released
/// (the record stays, its lease ended), takes it over and resumes after the step: through the
/// subscription and by polling alike.
async fn a_waiter_resumes_a_call_released_after_a_step() {
    let Some(target) = RedisTarget::on_owned().await else {
        return;
    };
    let stores = [
        ("subscribed", target.another_store().await),
        ("polling", polling_store(&target).await),
    ];
    for (what, store) in stores {
        let idem = Idempotency::new(store).with_namespace("resume");
        let charges = Arc::new(AtomicUsize::new(0));
        let checkout = |idem: &Idempotency,
                        fail: Option<oneshot::Receiver<()>>,
                        charged: Option<oneshot::Sender<()>>| {
            let (idem, charges) = (idem.clone(), charges.clone());
            let call = call(&idem, what).with_wait(Duration::from_secs(60));
            async move {
                idem.run(call, async move {
                    let charge = step("charge", async {
                        Ok::<_, Error>(charges.fetch_add(1, Ordering::SeqCst) + 1)
                    })
                    .await?;
                    if let (Some(fail), Some(charged)) = (fail, charged) {
                        charged.send(()).unwrap();
                        fail.await.unwrap();
                        return Err(Error::InvalidKey("declined".into()));
                    }
                    Ok(charge)
                })
                .await
            }
        };
        let (charged_tx, charged) = oneshot::channel();
        let (fail, fail_rx) = oneshot::channel();
        let first = tokio::spawn(checkout(&idem, Some(fail_rx), Some(charged_tx)));
        charged.await.unwrap();
        target.reset_command_stats().await;
        let waiter = tokio::spawn(checkout(&idem, None, None));
        // The waiter reads the record once it waits (GET), before its first pause. Nothing
        // else reads it meanwhile: the waiter's reserve is a SET, and no script runs while
        // the first call is held.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while calls(&target.command_calls().await, "get") == 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{what}: the waiter never waited"
            );
            tokio::task::yield_now().await;
        }
        fail.send(()).unwrap();
        assert!(
            first.await.unwrap().is_err(),
            "{what}: the first call fails"
        );
        let resumed = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .unwrap_or_else(|_| panic!("{what}: the release must wake the waiter"))
            .unwrap()
            .unwrap_or_else(|err| panic!("{what}: the waiter resumes, got {err:?}"));
        assert_eq!(resumed.value, 1, "{what}: the charge comes from the record");
        assert!(!resumed.replayed, "{what}");
        assert_eq!(
            charges.load(Ordering::SeqCst),
            1,
            "{what}: the charge ran again"
        );
    }
}

async fn the_eviction_policy_is_read_at_connect() {
    let Some(evicting) = TestRedis::start_with(&["--maxmemory-policy", "allkeys-lru"]) else {
        return;
    };
    let store = RedisStore::connect(evicting.url()).await.unwrap();
    assert_eq!(
        store.eviction_policy().await.unwrap().as_deref(),
        Some("allkeys-lru")
    );
    let Some(safe) = TestRedis::start_owned() else {
        return;
    };
    let store = RedisStore::connect(safe.url()).await.unwrap();
    assert_eq!(
        store.eviction_policy().await.unwrap().as_deref(),
        Some("noeviction")
    );
}

/// Waits until `primary` reports `replicas` connected replicas in sync.
async fn wait_for_sync(primary: &TestRedis, replicas: usize) {
    let mut conn = Client::open(primary.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let synced = format!("connected_slaves:{replicas}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query_async(&mut conn)
            .await
            .unwrap();
        if info.contains(&synced) && info.contains("state=online") {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the replica did not sync: {info}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `WAIT` longer than the response timeout answers how many replicas acknowledged, instead of
/// the request timing out: the call fails closed as not replicated, its body never run.
async fn wait_for_replicas_longer_than_the_response_timeout_is_answered() {
    let Some(server) = TestRedis::start_owned() else {
        return;
    };
    let target = RedisTarget::on(server).await;
    let store = RedisStore::builder(Client::open(target.url()).unwrap())
        .prefix(target.prefix())
        .response_timeout(Duration::from_millis(300))
        .wait_for_replicas(1, Duration::from_millis(900))
        .connect()
        .await
        .unwrap();
    let idem = Idempotency::new(store);
    let error = idem
        .run(call(&idem, "o-1"), async {
            panic!("the body must not run without its reservation replicated") as Result<u64, Error>
        })
        .await
        .unwrap_err();
    let Error::Store { source, .. } = &error else {
        panic!("{error:?}")
    };
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&**source);
    let mut chain = Vec::new();
    while let Some(error) = cause {
        chain.push(error.to_string());
        cause = error.source();
    }
    assert!(
        chain
            .iter()
            .any(|text| text.contains("0 of 1 replicas acknowledged")),
        "WAIT answered, rather than a timeout: {chain:?}"
    );
}

async fn wait_for_replicas_waits_after_each_write() {
    let Some(primary) = TestRedis::start_owned() else {
        return;
    };
    let port = primary.port().to_string();
    let Some(_replica) = TestRedis::start_with(&["--replicaof", "127.0.0.1", &port]) else {
        return;
    };
    wait_for_sync(&primary, 1).await;
    let target = RedisTarget::on(primary).await;
    let store = RedisStore::builder(Client::open(target.url()).unwrap())
        .prefix(target.prefix())
        .wait_for_replicas(1, Duration::from_secs(5))
        .connect()
        .await
        .unwrap();
    let idem = Idempotency::new(store.clone());
    // Loads the scripts, so that the count below has one request per script.
    idem.run(call(&idem, "warm-up"), async { Ok::<_, Error>(0u64) })
        .await
        .unwrap();
    target.reset_command_stats().await;
    let done = idem
        .run(call(&idem, "o-1"), async { Ok::<_, Error>(1u64) })
        .await
        .unwrap();
    assert!(!done.replayed);
    let commands = target.command_calls().await;
    assert_eq!(
        calls(&commands, "wait"),
        2,
        "after reserve and complete: {commands:?}"
    );
    // The reserve is a plain SET; complete is the one script. The `set` count also holds the
    // SET the complete script runs inside the server, so it is only bounded from below.
    assert_eq!(calls(&commands, "evalsha"), 1, "{commands:?}");
    assert!(calls(&commands, "set") >= 1, "{commands:?}");

    let stepped = |order| {
        let idem = idem.clone();
        async move {
            idem.run(call(&idem, order), async {
                step("charge", async { Ok::<_, Error>(1u64) }).await
            })
            .await
            .unwrap()
        }
    };
    stepped("warm-up-step").await;
    target.reset_command_stats().await;
    assert!(!stepped("o-2").await.replayed);
    let commands = target.command_calls().await;
    assert_eq!(
        calls(&commands, "wait"),
        3,
        "after reserve, the step and complete: {commands:?}"
    );
    assert_eq!(
        calls(&commands, "evalsha"),
        2,
        "record_step and complete: {commands:?}"
    );
    assert!(calls(&commands, "set") >= 1, "{commands:?}");

    // A reserve sent again by its owner (its reply was lost) finds its own reservation, which
    // the first SET may have written on another connection: it is written once more, on the
    // connection the WAIT is sent on.
    let key = idem.key("orders.create").part("again").finish().unwrap();
    let now = Timestamp::from_system_time(SystemTime::now());
    let record = InProgress::new(
        OwnerToken::from("owner-again".to_owned()),
        Fingerprint::empty(),
        now + Duration::from_secs(30),
    );
    let claim = Claim::new(record.clone(), now);
    store.reserve(&key, &claim).await.unwrap();
    target.reset_command_stats().await;
    assert_eq!(
        store.reserve(&key, &claim).await.unwrap(),
        Reservation::Reserved(record)
    );
    let commands = target.command_calls().await;
    assert_eq!(calls(&commands, "wait"), 1, "{commands:?}");
    assert!(
        calls(&commands, "evalsha") + calls(&commands, "eval") >= 1,
        "the reservation written again: {commands:?}"
    );
}

async fn too_few_replicas_fail_the_call_closed() {
    let Some(target) = RedisTarget::on_owned().await else {
        return;
    };
    let store = RedisStore::builder(Client::open(target.url()).unwrap())
        .prefix(target.prefix())
        .wait_for_replicas(1, Duration::from_millis(50))
        .connect()
        .await
        .unwrap();
    let idem = Idempotency::new(store);
    let mut ran = false;
    let err = idem
        .run(call(&idem, "o-1"), async {
            ran = true;
            Ok::<_, Error>(1u64)
        })
        .await
        .unwrap_err();
    assert!(
        !ran,
        "the function must not run on an unreplicated reservation"
    );
    let Error::Store { source, .. } = &err else {
        panic!("expected Error::Store, got {err:?}")
    };
    assert!(source.downcast_ref::<NotReplicated>().is_some(), "{source}");
    assert!(err.is_retryable());
    // The reservation was released, so a store without the requirement runs the call.
    let plain = Idempotency::new(target.another_store().await);
    let done = plain
        .run(
            call(&plain, "o-1").with_wait(Duration::from_secs(5)),
            async { Ok::<_, Error>(2u64) },
        )
        .await
        .unwrap();
    assert_eq!((done.value, done.replayed), (2, false));
}

idem_tests::module_tests! {
    async waiters_are_woken_by_publication_not_polling,
    async the_eviction_policy_is_read_at_connect,
    async a_waiter_resumes_a_call_released_after_a_step,
    async wait_for_replicas_waits_after_each_write,
    async wait_for_replicas_longer_than_the_response_timeout_is_answered,
    async too_few_replicas_fail_the_call_closed,
}
