//! The Redis store on a three-node Redis Cluster: keys spread over every node, each request
//! routed to the node that owns its key.

use idem_core::{Call, Error, Fingerprint, Idempotency};
use idem_tests::redis_cluster::cli;
use idem_tests::redis_target::RedisClusterTarget;

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

idem_tests::backend_tests! {
    async keys_spread_over_every_node_and_replay_in_one_round_trip,
}
