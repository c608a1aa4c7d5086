//! The inventory scenarios every listing store runs the same way: a listing under a prefix
//! and nothing outside it, keys that parse back and prefixes that are not patterns, and a
//! purge that deletes what stopped counting and keeps the rest. Each store's file checks
//! what is its own (the order it lists in, how its pages end).

use std::time::Duration;

use idem_core::store::{Store, LEASE_GRACE};
use idem_core::{Key, KeyBuilder};

use crate::inventory::{self, complete, entries, key, listed, now, reserve, set, Entry};
use crate::inventory::{HOUR, SECOND};

/// Writes three completed charges and a running one to `store`, a chargeback and a refund
/// beside them, and a charge to `other` (the same table under another prefix); checks that
/// `store` lists six records and `other` its one, and nothing under an unused function.
/// Returns the charges as written and the entries listed under their function's prefix, a
/// page of a hundred, in the order listed, each as `store` reads it.
pub async fn charges_under_a_prefix(
    store: &dyn Store,
    other: &dyn Store,
) -> (Vec<Key>, Vec<Entry>) {
    let mut charges: Vec<Key> = (1..=3).map(|n| key("charge", &[&n.to_string()])).collect();
    for charge in &charges {
        complete(store, charge, now(), now() + HOUR).await;
    }
    charges.push(key("charge", &["4"]));
    reserve(store, &charges[3], now() + HOUR, now()).await;
    complete(store, &key("chargeback", &["1"]), now(), now() + HOUR).await;
    complete(store, &key("refund", &["1"]), now(), now() + HOUR).await;
    complete(other, &key("charge", &["9"]), now(), now() + HOUR).await;

    let prefix = Key::function_prefix("idem", "charge");
    let (found, _) = entries(inventory::of(store), &prefix, 100).await;
    let keys: Vec<Key> = found.iter().map(|(key, _)| key.clone()).collect();
    assert_eq!(keys.len(), charges.len(), "{found:?}");
    assert_eq!(set(&keys), set(&charges), "the charges, and no chargeback");
    for (key, record) in &found {
        let got = store.get(key).await.unwrap();
        assert_eq!(
            record.as_ref().ok(),
            got.as_ref(),
            "`{key}` is listed as stored"
        );
    }

    assert_eq!(listed(inventory::of(store), "", 100).await.len(), 6);
    let theirs = listed(inventory::of(other), "", 100).await;
    assert_eq!(
        theirs,
        [key("charge", &["9"])],
        "a store lists its own prefix"
    );
    assert!(listed(inventory::of(store), "idem|nothing|", 10)
        .await
        .is_empty());
    (charges, found)
}

/// Writes two completed records of function `mixed`, `a` and `c`; returns the key between
/// them, `b`, for the caller to write a corrupt record under.
pub async fn two_records_around(store: &dyn Store) -> Key {
    for part in ["a", "c"] {
        complete(store, &key("mixed", &[part]), now(), now() + HOUR).await;
    }
    key("mixed", &["b"])
}

/// Writes five keys of function `page`, out of order, completed and running by turns, and
/// records of a function `pagf` beside them that its prefix does not cover; returns the five.
pub async fn five_keys_to_page(store: &dyn Store) -> Vec<Key> {
    let written: Vec<Key> = ["e", "a", "d", "b", "c"]
        .into_iter()
        .map(|part| key("page", &[part]))
        .collect();
    for (n, key) in written.iter().enumerate() {
        if n % 2 == 0 {
            complete(store, key, now(), now() + HOUR).await;
        } else {
            reserve(store, key, now() + HOUR, now()).await;
        }
    }
    for part in ["a", "z", "0"] {
        complete(store, &key("pagf", &[part]), now(), now() + HOUR).await;
    }
    written
}

/// Keys with separators, escapes and wide characters in every part list under their
/// function's prefix (three a page), parse back and name their records; a prefix holding
/// `_`, `%` or `\` lists what starts with it, not what it would match as a pattern.
pub async fn keys_round_trip_and_prefixes_are_not_patterns(store: &dyn Store) {
    let awkward = [
        "a|b",
        "100%",
        "%7C",
        "under_score",
        "back\\slash",
        "ünïcødé 🔑",
        "日本語",
    ];
    let mut written = Vec::new();
    for part in awkward {
        let key = KeyBuilder::new("idem", "odd|name%_")
            .scope(Some("tenant|7%"))
            .part(part)
            .part("second")
            .finish()
            .unwrap();
        complete(store, &key, now(), now() + HOUR).await;
        written.push(key);
    }
    let prefix = Key::function_prefix("idem", "odd|name%_");
    let keys = listed(inventory::of(store), &prefix, 3).await;
    assert_eq!(set(&keys), set(&written));
    for key in &keys {
        assert_eq!(&Key::parse(key.as_str()).unwrap(), key);
        assert!(
            store.get(key).await.unwrap().is_some(),
            "`{key}` names its record"
        );
    }

    // Each pair's first key starts with the prefix; the second would match it as a pattern
    // (a LIKE's `_` any character, `%` anything, `\` an escape).
    let traps = [
        ("p_q", "pxq", "p_"),
        ("p%q", "pzq", "p%"),
        ("p\\q", "pq", "p\\"),
    ];
    for (inside, outside, _) in traps {
        for part in [inside, outside] {
            complete(store, &key("trap", &[part]), now(), now() + HOUR).await;
        }
    }
    for (inside, _, text) in traps {
        let prefix = key("trap", &[text]).as_str().to_owned();
        let keys = listed(inventory::of(store), &prefix, 10).await;
        assert_eq!(keys, [key("trap", &[inside])], "the prefix `{prefix}`");
    }
}

/// Records of every kind, each at the edge of counting or not: an expired one, an abandoned
/// lease, one whose steps expired go; a live one, a running one, a lease in its grace, one
/// whose steps are kept, a released one and one reserved again after it expired stay, as
/// they were. Purges of two go 2, 1, 0. `other`, the same table under another prefix, keeps
/// its expired record until its own purge.
pub async fn a_purge_deletes_what_stopped_counting_and_keeps_the_rest(
    store: &dyn Store,
    other: &dyn Store,
) {
    let long_ago = now() - 2 * HOUR;
    let k = |name: &str| key("purge", &[name]);

    complete(store, &k("expired"), long_ago, now() - SECOND).await;
    reserve(store, &k("abandoned"), now() - LEASE_GRACE, long_ago).await;
    let owner = reserve(store, &k("steps-expired"), long_ago + SECOND, long_ago).await;
    store
        .record_step(&k("steps-expired"), &owner, "charge", b"1", now())
        .await
        .unwrap();
    let gone = ["expired", "abandoned", "steps-expired"];

    complete(store, &k("live"), now(), now() + SECOND).await;
    reserve(store, &k("running"), now() + HOUR, now()).await;
    let in_grace = now() - LEASE_GRACE + Duration::from_millis(1);
    reserve(store, &k("in-grace"), in_grace, long_ago).await;
    let owner = reserve(store, &k("steps-held"), long_ago + SECOND, long_ago).await;
    store
        .record_step(&k("steps-held"), &owner, "charge", b"1", now() + SECOND)
        .await
        .unwrap();
    let owner = reserve(store, &k("released"), now() + HOUR, now()).await;
    store
        .record_step(&k("released"), &owner, "charge", b"1", now() + HOUR)
        .await
        .unwrap();
    store.release(&k("released"), &owner).await.unwrap();
    // Expired, then reserved again: it counts again.
    complete(store, &k("reserved-again"), long_ago, now() - HOUR).await;
    reserve(store, &k("reserved-again"), now() + HOUR, now()).await;
    complete(other, &k("theirs"), long_ago, now() - SECOND).await;
    let kept = [
        "live",
        "running",
        "in-grace",
        "steps-held",
        "released",
        "reserved-again",
    ];
    let mut before = Vec::new();
    for name in kept {
        before.push(store.get(&k(name)).await.unwrap());
    }

    let inventory = inventory::of(store);
    assert_eq!(inventory.purge_expired(now(), 2).await.unwrap(), 2);
    assert_eq!(inventory.purge_expired(now(), 2).await.unwrap(), 1);
    assert_eq!(inventory.purge_expired(now(), 2).await.unwrap(), 0);
    for name in gone {
        assert_eq!(
            store.get(&k(name)).await.unwrap(),
            None,
            "`{name}` is purged"
        );
    }
    for (name, before) in kept.into_iter().zip(before) {
        let after = store.get(&k(name)).await.unwrap();
        assert!(after.is_some(), "`{name}` is kept");
        assert_eq!(after, before, "`{name}` is unchanged");
    }
    assert!(other.get(&k("theirs")).await.unwrap().is_some());
    let theirs = inventory::of(other).purge_expired(now(), 10).await.unwrap();
    assert_eq!(theirs, 1, "another prefix's purge takes its own");
}
