//! The Redis store on a Redis Cluster: keys spread over every node, each request routed to the
//! node that owns its key, and records that survive their slot being migrated.

use std::sync::atomic::{AtomicUsize, Ordering};

use std::time::Duration;

use idem_core::{store::Store, Call, Error, Fingerprint, Idempotency};
use idem_stores::redis::RedisStore;
use idem_test_servers::redis::cluster::{cli, TestRedisCluster};
use idem_test_servers::redis::target::RedisClusterTarget;
use tokio::sync::oneshot;

const KEYS: usize = 300;

fn call(idem: &Idempotency, order: usize) -> Call {
    let key = idem.key("orders.create").part(&order).finish().unwrap();
    Call::new(key, Fingerprint::of(&order).unwrap())
}

async fn keys_spread_over_every_node_and_replay_in_one_round_trip() {
    let Some(target) = RedisClusterTarget::start(3).await else {
        return;
    };
    let store = target.redis_store().clone();
    let idem = Idempotency::new(store.clone());

    for order in 0..KEYS {
        let done = idem
            .run(call(&idem, order), async { Ok::<_, Error>(order * 10) })
            .await
            .unwrap();
        assert!(!done.replayed);
    }
    for port in target.cluster().ports() {
        let keys: usize = cli(&["-p", &port.to_string(), "DBSIZE"])
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            keys > KEYS / 10,
            "node {port} holds only {keys} of {KEYS} records"
        );
    }

    let before = store.round_trips();
    for order in 0..KEYS {
        let done = idem
            .run(call(&idem, order), async { Ok::<_, Error>(0) })
            .await
            .unwrap();
        assert!(done.replayed);
        assert_eq!(done.value, order * 10);
    }
    assert_eq!(
        store.round_trips() - before,
        KEYS as u64,
        "one request per replay"
    );

    let err = idem
        .run(
            Call::new(
                call(&idem, 7).key().clone(),
                Fingerprint::of(&"other").unwrap(),
            ),
            async { Ok::<_, Error>(0) },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Mismatch { .. }), "{err:?}");
}

/// A call whose body is running when its key's slot starts migrating to another node (as
/// `redis-cli --cluster reshard` does) completes on the node that holds its record: the record
/// is never deleted and written again, which a migrating slot refuses halfway.
async fn a_completion_in_a_migrating_slot_keeps_its_record() {
    let Some(target) = RedisClusterTarget::start(3).await else {
        return;
    };
    let cluster = target.cluster();
    let idem = Idempotency::new(target.redis_store().clone());
    let call = call(&idem, 1);
    let redis_key = target.redis_store().redis_key(call.key());
    let slot = cluster.slot_of(&redis_key).unwrap().to_string();
    let source = cluster.owner_of(slot.parse().unwrap()).unwrap();
    let destination = (source + 1) % 3;
    let (source_id, destination_id) = (
        cluster.node_id(source).unwrap(),
        cluster.node_id(destination).unwrap(),
    );

    let (started_tx, started) = oneshot::channel();
    let (release, released) = oneshot::channel::<()>();
    let runs = AtomicUsize::new(0);
    let body = async {
        runs.fetch_add(1, Ordering::SeqCst);
        started_tx.send(()).unwrap();
        released.await.unwrap();
        Ok::<_, Error>(42)
    };
    let migrate = async {
        started.await.unwrap();
        let importing = ["CLUSTER", "SETSLOT", &slot, "IMPORTING", &source_id];
        cluster.cli_on(destination, &importing).unwrap();
        let migrating = ["CLUSTER", "SETSLOT", &slot, "MIGRATING", &destination_id];
        cluster.cli_on(source, &migrating).unwrap();
        release.send(()).unwrap();
    };
    let (done, ()) = tokio::join!(idem.run(call.clone(), body), migrate);
    assert_eq!(done.expect("the outcome is recorded").value, 42);

    // The record, completed in place on the source node: `idm1C`, ..., outcome `ok`, body `42`.
    let stored = cluster.cli_on(source, &["GET", &redis_key]).unwrap();
    let stored = stored.trim_end();
    assert!(stored.starts_with("idm1C"), "not completed: {stored:?}");
    assert!(
        stored.contains("2:ok") && stored.ends_with("2:42"),
        "not the outcome 42: {stored:?}"
    );
    let retry = idem.run(call, async { Ok::<_, Error>(0) }).await.unwrap();
    assert!(retry.replayed);
    assert_eq!(retry.value, 42);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// Calls keep running while `redis-cli --cluster reshard` moves slots from one node to
/// another; every call that returned its outcome replays it afterwards, without running again,
/// and no record is lost.
async fn records_survive_a_reshard_under_load() {
    let Some(target) = RedisClusterTarget::start(3).await else {
        return;
    };
    let cluster = target.cluster();
    let idem = Idempotency::new(target.redis_store().clone());
    let (from, to) = (cluster.node_id(0).unwrap(), cluster.node_id(1).unwrap());
    let entry = format!("127.0.0.1:{}", cluster.ports()[0]);
    let reshard = tokio::task::spawn_blocking(move || {
        let args = [
            "--cluster",
            "reshard",
            &entry,
            "--cluster-from",
            &from,
            "--cluster-to",
            &to,
            "--cluster-slots",
            "3000",
            "--cluster-yes",
        ];
        cli(&args).map(drop)
    });

    let runs = AtomicUsize::new(0);
    let mut recorded = Vec::new();
    let mut unconfirmed = Vec::new();
    let mut order = 0;
    while !reshard.is_finished() || order < 100 {
        let calls = (order..order + 50).map(|order| {
            let (runs, idem) = (&runs, &idem);
            async move {
                let body = async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    // Work that takes a while, so that slots start migrating under it.
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    Ok::<_, Error>(order * 10)
                };
                (order, idem.run(call(idem, order), body).await)
            }
        });
        for (order, outcome) in futures_util::future::join_all(calls).await {
            match outcome {
                Ok(done) => recorded.push((order, done.value)),
                Err(Error::NotRecorded { cause, .. }) => {
                    // The store's scripts never lose an owner's record...
                    assert!(!matches!(*cause, Error::LeaseLost { .. }), "order {order}");
                    // ...but the client may time out while the cluster moves slots.
                    unconfirmed.push(order);
                }
                Err(_) => {}
            }
        }
        order += 50;
    }
    reshard.await.unwrap().expect("the reshard succeeds");

    let ran = runs.load(Ordering::SeqCst);
    for (order, value) in &recorded {
        let replay = idem
            .run(call(&idem, *order), async { Ok::<_, Error>(0) })
            .await
            .unwrap();
        assert!(replay.replayed, "order {order} was not recorded");
        assert_eq!(replay.value, *value);
    }
    assert_eq!(runs.load(Ordering::SeqCst), ran, "no body ran twice");
    assert!(recorded.len() >= 100);
    // A call whose completion went unconfirmed still has its record, completed or held.
    let store = target.redis_store();
    for order in unconfirmed {
        let record = store.get(call(&idem, order).key()).await.unwrap();
        assert!(record.is_some(), "the record of order {order} is gone");
    }
}

/// A store on `cluster` that has every write confirmed by one replica.
async fn waiting_for_a_replica(cluster: &TestRedisCluster) -> RedisStore {
    let urls = cluster.urls();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    // Long enough for a live replica on a loaded machine (half a second was not, while a
    // failover's elections ran beside it); a shard without one is refused when it runs out.
    RedisStore::cluster_builder(&urls)
        .wait_for_replicas(1, Duration::from_secs(5))
        .connect()
        .await
        .unwrap()
}

/// A body that counts its runs in `runs` and returns `value`.
async fn counted(runs: &AtomicUsize, value: usize) -> Result<usize, Error> {
    runs.fetch_add(1, Ordering::SeqCst);
    Ok(value)
}

/// With `wait_for_replicas`, `WAIT` goes to the primary that holds the key: a shard whose
/// replica died fails its own calls closed, and the other shards' calls go on.
async fn a_shard_without_its_replica_fails_only_its_own_calls() {
    let Some(mut cluster) = TestRedisCluster::start_with_replicas(3, 1) else {
        return;
    };
    let store = waiting_for_a_replica(&cluster).await;
    let idem = Idempotency::new(store.clone());
    let shard_of = |order: usize| {
        let key = store.redis_key(call(&idem, order).key());
        cluster.owner_of(cluster.slot_of(&key).unwrap()).unwrap()
    };
    let orphaned = shard_of(0);
    let healthy = (1..).find(|&order| shard_of(order) != orphaned).unwrap();
    let orphan = (1..).find(|&order| shard_of(order) == orphaned).unwrap();
    for replica in cluster.replicas_of(orphaned).unwrap() {
        cluster.kill(replica);
    }

    let runs = AtomicUsize::new(0);
    let body = |value| counted(&runs, value);
    let done = idem.run(call(&idem, healthy), body(1)).await.unwrap();
    assert!(
        !done.replayed,
        "a healthy shard's call is confirmed by its replica"
    );
    let refused = idem.run(call(&idem, orphan), body(2)).await.unwrap_err();
    assert!(matches!(refused, Error::Store { .. }), "{refused:?}");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the unconfirmed call never ran"
    );
    let replay = idem.run(call(&idem, healthy), body(3)).await.unwrap();
    assert!(replay.replayed);
}

/// After a primary dies and its replica takes over, the promoted primary has no replica of its
/// own: with `wait_for_replicas`, its shard fails its calls closed (nothing runs), and the
/// other shards' calls go on.
async fn after_a_failover_only_the_promoted_shard_fails_closed() {
    let Some(mut cluster) = TestRedisCluster::start_with_replicas(3, 1) else {
        return;
    };
    let store = waiting_for_a_replica(&cluster).await;
    let idem = Idempotency::new(store.clone());
    let slot_of = |order: usize| {
        let key = store.redis_key(call(&idem, order).key());
        cluster.slot_of(&key).unwrap()
    };
    // Node 0 answers the test's own questions about the cluster, so it must live.
    let failed_order = (0..)
        .find(|&order| cluster.owner_of(slot_of(order)).unwrap() != 0)
        .unwrap();
    let failed_slot = slot_of(failed_order);
    let failed_primary = cluster.owner_of(failed_slot).unwrap();
    let healthy_order = (0..)
        .find(|&order| cluster.owner_of(slot_of(order)).unwrap() == 0)
        .unwrap();
    cluster.kill(failed_primary);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while cluster.owner_of(failed_slot).unwrap() == failed_primary {
        assert!(std::time::Instant::now() < deadline, "no replica took over");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let runs = AtomicUsize::new(0);
    let body = |value| counted(&runs, value);
    let done = idem.run(call(&idem, healthy_order), body(1)).await.unwrap();
    assert_eq!(done.value, 1);
    let refused = idem
        .run(call(&idem, failed_order), body(2))
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::Store { .. }), "{refused:?}");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the unconfirmed call never ran"
    );
}

/// Braces in a key part are client input: Redis Cluster must hash the whole key rather than
/// the part between them, or `{hot}1`, `{hot}2`... from every principal would share one slot.
/// A hash tag in the store's prefix still chooses, as the application asked.
async fn braces_in_a_key_part_never_choose_the_slot() {
    let Some(target) = RedisClusterTarget::start(3).await else {
        return;
    };
    let cluster = target.cluster();
    let urls = cluster.urls();
    let nodes: Vec<&str> = urls.iter().map(String::as_str).collect();
    let idem = Idempotency::new(target.redis_store().clone());
    let keys: Vec<_> = (0..20)
        .map(|n| {
            idem.key("orders.create")
                .scope(Some(&format!("principal-{n}")))
                .part(&format!("{{hot}}{n}"))
                .finish()
                .unwrap()
        })
        .collect();
    let slots_of = |store: &RedisStore| -> std::collections::HashSet<u16> {
        keys.iter()
            .map(|key| cluster.slot_of(&store.redis_key(key)).unwrap())
            .collect()
    };

    let spread = slots_of(target.redis_store());
    assert!(spread.len() > 10, "20 keys on {} slots", spread.len());

    let tagged = RedisStore::cluster_builder(&nodes)
        .prefix("{billing}")
        .connect()
        .await
        .unwrap();
    let billing = cluster.slot_of("billing").unwrap();
    assert_eq!(slots_of(&tagged), [billing].into());

    let done = Idempotency::new(target.redis_store().clone())
        .run(
            Call::new(keys[0].clone(), Fingerprint::of(&0).unwrap()),
            async { Ok::<_, Error>(1) },
        )
        .await
        .unwrap();
    assert!(!done.replayed, "a key with braces is a key like any other");
}

idem_tests::module_tests! {
    async braces_in_a_key_part_never_choose_the_slot,
    async after_a_failover_only_the_promoted_shard_fails_closed = long,
    async a_shard_without_its_replica_fails_only_its_own_calls,
    async keys_spread_over_every_node_and_replay_in_one_round_trip,
    async a_completion_in_a_migrating_slot_keeps_its_record,
    async records_survive_a_reshard_under_load,
}
