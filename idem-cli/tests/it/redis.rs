//! `idem` on Redis: records written through a handle on a store with a key prefix, then read,
//! listed, released, forgotten and purged by the binary; and the same on a Redis Cluster.

use std::sync::Arc;

use idem_conformance::Target;
use idem_stores::redis::RedisStore;
use idem_test_servers::redis::target::{RedisClusterTarget, RedisTarget};

use crate::support::{self, Subject};

/// A store with a prefix of its own on the test server, and `idem --store redis://... --prefix`.
async fn start() -> Option<Subject> {
    let target = RedisTarget::start().await?;
    let cli = support::idem().store(["--store", target.url(), "--prefix", target.prefix()]);
    let store = Arc::new(target.redis_store().clone());
    Some(Subject::new(store, cli, target))
}

/// A record the store can't read, under the prefix `idem` reads.
async fn corrupt_record_is_reported_and_forgotten() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let cli = support::idem().store(["--store", target.url(), "--prefix", target.prefix()]);
    let subject = Subject::new(target.store(), cli, ());
    let key = support::records::key(&subject.idem, "charge", "order-9");
    assert!(target.corrupt(&key).await);
    support::scenarios::corrupt_record_is_reported_and_forgotten(&subject, &key).await;
}

/// Two prefixes on one server, the second the first and one more character: a purge under
/// one leaves the other's records.
async fn purge_stays_inside_its_prefix() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let longer = format!("{}b", target.prefix());
    let other = RedisStore::builder(
        idem_stores::redis::client::Client::open(target.url()).expect("a valid Redis URL"),
    )
    .prefix(longer.as_str())
    .connect()
    .await
    .expect("the test server accepts connections");
    let a = Subject::new(
        Arc::new(target.redis_store().clone()),
        support::idem().store(["--store", target.url(), "--prefix", target.prefix()]),
        (),
    );
    let b = Subject::new(
        Arc::new(other),
        support::idem().store(["--store", target.url(), "--prefix", longer.as_str()]),
        (),
    );
    support::scenarios::purge_stays_inside_its_prefix(&a, &b).await;
}

/// Redis keys under the prefix that hold no idempotency key after it, written with the
/// server's own client: one that is not UTF-8, one of 2000 bytes.
async fn keys_that_are_no_keys_are_listed_and_counted() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let cli = support::idem().store(["--store", target.url(), "--prefix", target.prefix()]);
    let subject = Subject::new(Arc::new(target.redis_store().clone()), cli, ());
    let mut prefix = target
        .redis_store()
        .redis_key(&idem_core::Key::parse("|").expect("a key"));
    prefix.pop();
    let long = format!("idem|charge|-|{}", "a".repeat(2000));
    let planted = vec![
        (
            b"idem|charge|-|\xff\xfe\x1b".to_vec(),
            "idem|charge|-|\\xff\\xfe\\x1b".to_owned(),
        ),
        (long.clone().into_bytes(), long),
    ];
    let mut conn = target.raw().await;
    for (key, _) in &planted {
        let mut name = prefix.clone().into_bytes();
        name.extend_from_slice(key);
        let _: () = idem_stores::redis::client::cmd("SET")
            .arg(name)
            .arg(&b"hidden"[..])
            .query_async(&mut conn)
            .await
            .expect("SET works");
    }
    support::scenarios::unkeyed_entries_are_listed_and_counted(&subject, &planted).await;
}

/// `count` stores, each with a prefix of its own, on one three-node cluster, each with
/// `idem --store redis+cluster://node,node,node --prefix`.
async fn on_cluster(count: usize) -> Option<Vec<Subject>> {
    let target = Arc::new(RedisClusterTarget::start(3).await?);
    let nodes: Vec<String> = target
        .cluster()
        .ports()
        .iter()
        .map(|port| format!("127.0.0.1:{port}"))
        .collect();
    let url = format!("redis+cluster://{}", nodes.join(","));
    let node_urls = target.cluster().urls();
    let node_urls: Vec<&str> = node_urls.iter().map(String::as_str).collect();
    let mut subjects = Vec::new();
    for n in 0..count {
        let prefix = format!(
            "cli-{n}-{}:",
            idem_core::store::OwnerToken::generate().as_str()
        );
        let store = RedisStore::cluster_builder(&node_urls)
            .prefix(prefix.as_str())
            .connect()
            .await
            .expect("the test cluster accepts connections");
        let cli = support::idem().store(["--store", url.as_str(), "--prefix", prefix.as_str()]);
        subjects.push(Subject::new(Arc::new(store), cli, target.clone()));
    }
    Some(subjects)
}

/// On a cluster: `get`, `release` and `forget`, which every store offers.
async fn cluster_get_release_forget() {
    let Some(subjects) = on_cluster(3).await else {
        return;
    };
    support::scenarios::get_shows_each_kind_of_record(&subjects[0]).await;
    support::scenarios::release_needs_yes_and_frees_the_key(&subjects[1]).await;
    support::scenarios::forget_deletes_the_record(&subjects[2]).await;
}

/// On a cluster: the listing spans every node.
async fn cluster_list_and_stats() {
    let Some(subjects) = on_cluster(2).await else {
        return;
    };
    support::scenarios::list_filters_by_function_state_and_limit(&subjects[0]).await;
    support::scenarios::stats_count_by_function_and_state(&subjects[1]).await;
}

support::scenarios::store_tests!(
    redis: start,
    corrupt_record_is_reported_and_forgotten,
    purge_stays_inside_its_prefix,
    keys_that_are_no_keys_are_listed_and_counted,
    cluster_get_release_forget,
    cluster_list_and_stats,
);
