//! The operators' inventory ([`Store::inventory`](idem_core::store::Store::inventory)): listing
//! records by key prefix, page by page; and the helpers of the purge's checks (`purge.rs`).
//!
//! Each check runs only where the store offers an inventory, and passes vacuously, saying so,
//! where it does not. Records are written at the store's interface, with times taken from the
//! system clock.
//!
//! A store may list records as it keeps them rather than as `get` returns them: a sealed view
//! lists keys as their digests and values sealed. So a listed key is matched to the key written
//! by the record `get` returns for both, and a listed outcome or step value may differ from
//! `get`'s only by being sealed (starting with a zero byte, which no JSON value does).

use std::time::Duration;

use super::Context;
use idem_core::store::{Inventory, ListQuery};
use idem_core::Clock as _;
use idem_core::{
    store::{
        Claim, Completed, InProgress, Outcome, OwnerToken, Record, Reservation, Steps, Timestamp,
    },
    Fingerprint, Key, KeyBuilder, StoreError, SystemClock,
};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(a_listing_finds_every_record_under_its_prefix),
    check!(a_listing_pages_through_every_key_once),
    check!(listed_keys_parse_back_to_the_keys_written),
    check!(a_listing_reports_a_corrupt_record),
];

/// How far from `now` the checks put what must clearly count, or clearly not.
pub(super) const HOUR: Duration = Duration::from_secs(3600);
/// A lease long enough for a record written in the past to stay in progress.
pub(super) const MINUTE: Duration = Duration::from_secs(60);

/// Past this many pages a listing is taken never to end.
pub(super) const MAX_PAGES: usize = 100_000;

/// One entry of a listing.
type Entry = (Key, Result<Record, StoreError>);

/// The store's inventory, or `None` after saying on stderr that the check does not apply.
pub(super) fn inventory(ctx: &Context) -> Option<&dyn Inventory> {
    let inventory = ctx.store().inventory();
    if inventory.is_none() {
        eprintln!("conformance: this store offers no inventory; check passes vacuously");
    }
    inventory
}

/// What every key of `namespace` starts with: the namespace as keys encode it, then `|`.
/// Under a key digest too (`namespace|#digest`).
fn namespace_prefix(namespace: &str) -> String {
    let key = KeyBuilder::new(namespace, "probe")
        .finish()
        .expect("short keys are valid");
    let encoded = key.as_str().split('|').next().expect("split yields one");
    format!("{encoded}|")
}

/// This check's key of function `name`.
pub(super) fn key_in(namespace: &str, name: &str) -> Key {
    KeyBuilder::new(namespace, name)
        .finish()
        .expect("short keys are valid")
}

/// A fresh claim of the call `what`, leased until `lease_until`, made at `at`.
pub(super) fn claim(what: &str, lease_until: Timestamp, at: Timestamp) -> Claim {
    let fingerprint = Fingerprint::of(what).expect("text fingerprints");
    let record = InProgress::new(OwnerToken::generate(), fingerprint, lease_until)
        .with_fencing_token(idem_core::store::propose_fencing_token(at));
    Claim::new(record, at)
}

/// Reserves the free `key` for `what` at `at`, leased until `lease_until`.
pub(super) async fn reserve(
    ctx: &Context,
    key: &Key,
    what: &str,
    lease_until: Timestamp,
    at: Timestamp,
) {
    let claim = claim(what, lease_until, at);
    assert_eq!(
        ctx.store().reserve(key, &claim).await.unwrap(),
        Reservation::Reserved(claim.record().clone()),
        "a free key is reserved as claimed"
    );
}

/// Writes a completed record with `outcome` under `key`, reserved at `at` and expiring at
/// `expires`.
pub(super) async fn complete(
    ctx: &Context,
    key: &Key,
    outcome: Outcome,
    at: Timestamp,
    expires: Timestamp,
) {
    let what = key.as_str();
    let claim = claim(what, while_written(at), at);
    let store = ctx.store();
    assert!(matches!(
        store.reserve(key, &claim).await.unwrap(),
        Reservation::Reserved(_)
    ));
    let done = Completed::new(*claim.record().fingerprint(), outcome, expires);
    store
        .complete(key, claim.record().owner(), &done)
        .await
        .unwrap();
}

/// Reserves `key` at `lease.0`, leased until `lease.1`, and records two steps kept until
/// `kept`.
pub(super) async fn with_step(
    ctx: &Context,
    key: &Key,
    lease: (Timestamp, Timestamp),
    kept: Timestamp,
) {
    let (at, lease_until) = lease;
    let claim = claim(key.as_str(), while_written(at), at);
    let (store, owner) = (ctx.store(), claim.record().owner());
    store.reserve(key, &claim).await.unwrap();
    for (step, value) in [("charge", &b"\"ch_1\""[..]), ("ledger", b"7")] {
        store
            .record_step(key, owner, step, value, kept)
            .await
            .unwrap();
    }
    store.renew(key, owner, lease_until).await.unwrap();
}

/// The lease of a record while a check writes it in several steps. The store is shared, and
/// other checks purge it meanwhile as of their own clocks: a record that counted as abandoned
/// between its reservation and its next write would be deleted under the check's feet. Its
/// lease is set as the check wants once it is written.
fn while_written(at: Timestamp) -> Timestamp {
    at.max(SystemClock.now()) + HOUR * 24 * 30
}

/// Follows the listing of `prefix` page by page, `limit` records a page, to its end; fails on
/// an error, a page longer than `limit`, or a listing that does not end.
async fn list_all(inventory: &dyn Inventory, prefix: &str, limit: u32) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut query = ListQuery::new(prefix, limit);
    for _ in 0..MAX_PAGES {
        let page = inventory
            .list(&query)
            .await
            .unwrap_or_else(|error| panic!("listing `{prefix}` failed: {error}"));
        assert!(
            page.records.len() <= limit as usize,
            "a page of at most {limit} records held {}",
            page.records.len()
        );
        for (key, _) in &page.records {
            assert!(
                key.as_str().starts_with(prefix),
                "listing the prefix `{prefix}` gave the key `{key}`, outside it"
            );
        }
        entries.extend(page.records);
        match page.cursor {
            Some(cursor) => query = query.after(Some(cursor)),
            None => return entries,
        }
    }
    panic!("listing `{prefix}` did not end after {MAX_PAGES} pages");
}

/// Whether `listed` is the record `got` (what `get` returned), but for outcome and step bytes
/// that a view may list sealed.
fn listed_as(listed: &Record, got: &Record) -> bool {
    fn bytes(listed: &[u8], got: &[u8]) -> bool {
        listed == got || listed.first() == Some(&0)
    }
    match (listed, got) {
        _ if listed == got => true,
        (Record::InProgress(a), Record::InProgress(b)) => {
            a.clone().with_steps(Steps::new()) == b.clone().with_steps(Steps::new())
                && a.steps().kept_until() == b.steps().kept_until()
                && a.steps().len() == b.steps().len()
                && a.steps()
                    .iter()
                    .all(|(name, v)| b.steps().get(name).is_some_and(|w| bytes(v, w)))
        }
        (Record::Completed(a), Record::Completed(b)) => {
            a.fingerprint() == b.fingerprint()
                && a.expires_at() == b.expires_at()
                && match (a.outcome(), b.outcome()) {
                    (Outcome::Ok(v), Outcome::Ok(w)) | (Outcome::Err(v), Outcome::Err(w)) => {
                        bytes(v, w)
                    }
                    (Outcome::Aborted, Outcome::Aborted) => true,
                    _ => false,
                }
        }
        _ => false,
    }
}

/// Checks that `listed` holds each of `written` exactly once and nothing else, each entry the
/// record `get` returns for it; returns the listed key of each written one, in order.
async fn assert_lists_exactly(ctx: &Context, written: &[Key], listed: &[Entry]) -> Vec<Key> {
    let store = ctx.store();
    let mut expected = Vec::with_capacity(written.len());
    for key in written {
        let record = store.get(key).await.unwrap();
        expected.push(record.unwrap_or_else(|| panic!("`{key}` holds no record to list")));
    }
    let mut found: Vec<Option<Key>> = vec![None; written.len()];
    for (key, entry) in listed {
        let record = match entry {
            Ok(record) => record,
            Err(error) => panic!("`{key}` was listed with an error: {error}"),
        };
        let got =
            store.get(key).await.unwrap().unwrap_or_else(|| {
                panic!("`{key}` was listed, but `get` finds no record under it")
            });
        assert!(
            listed_as(record, &got),
            "`{key}` was listed as {record:?}, but `get` returns {got:?}"
        );
        let Some(index) = expected.iter().position(|e| *e == got) else {
            panic!("`{key}` was listed, but no key written under the prefix holds its record");
        };
        if let Some(before) = found[index].replace(key.clone()) {
            panic!(
                "`{}` was listed twice (as `{before}` and `{key}`)",
                written[index]
            );
        }
    }
    written
        .iter()
        .zip(found)
        .map(|(key, listed)| listed.unwrap_or_else(|| panic!("`{key}` was not listed")))
        .collect()
}

/// A listing of a namespace finds its reserved, completed (ok, err, aborted), stepped and
/// released records, each as `get` returns it, and none of a namespace whose name merely
/// starts with it.
async fn a_listing_finds_every_record_under_its_prefix(ctx: Context) {
    let Some(inventory) = inventory(&ctx) else {
        return;
    };
    let now = SystemClock.now();
    let ns = ctx.handle().namespace().to_owned();
    let key = |name: &str| key_in(&ns, name);
    reserve(&ctx, &key("reserved"), "reserved", now + HOUR, now).await;
    let ok = Outcome::ok(b"\"receipt-1\"".to_vec());
    complete(&ctx, &key("ok"), ok, now, now + HOUR).await;
    let err = Outcome::err(b"{\"declined\":true}".to_vec());
    complete(&ctx, &key("err"), err, now, now + HOUR).await;
    complete(&ctx, &key("aborted"), Outcome::Aborted, now, now + HOUR).await;
    with_step(&ctx, &key("stepped"), (now, now + HOUR), now + HOUR).await;
    let released = key("released");
    with_step(&ctx, &released, (now, now + HOUR), now + HOUR).await;
    let Some(Record::InProgress(held)) = ctx.store().get(&released).await.unwrap() else {
        panic!("a record with steps is in progress");
    };
    ctx.store().release(&released, held.owner()).await.unwrap();
    let outside = format!("{ns}-outside");
    reserve(&ctx, &key_in(&outside, "reserved"), "o", now + HOUR, now).await;
    complete(
        &ctx,
        &key_in(&outside, "ok"),
        Outcome::Aborted,
        now,
        now + HOUR,
    )
    .await;

    let written: Vec<Key> = ["reserved", "ok", "err", "aborted", "stepped", "released"]
        .into_iter()
        .map(key)
        .collect();
    let listed = list_all(inventory, &namespace_prefix(&ns), 100).await;
    assert_lists_exactly(&ctx, &written, &listed).await;
}

/// Paging: two records a page over five, following each page's cursor, lists every key once
/// and ends with no cursor; a prefix with no record ends at once.
async fn a_listing_pages_through_every_key_once(ctx: Context) {
    let Some(inventory) = inventory(&ctx) else {
        return;
    };
    let now = SystemClock.now();
    let ns = ctx.handle().namespace().to_owned();
    let mut written = Vec::new();
    for i in 0..5 {
        let key = key_in(&ns, &format!("page-{i}"));
        if i % 2 == 0 {
            reserve(&ctx, &key, &format!("page-{i}"), now + HOUR, now).await;
        } else {
            let body = format!("\"receipt-{i}\"").into_bytes();
            complete(&ctx, &key, Outcome::ok(body), now, now + HOUR).await;
        }
        written.push(key);
    }
    let listed = list_all(inventory, &namespace_prefix(&ns), 2).await;
    assert_lists_exactly(&ctx, &written, &listed).await;
    let nothing = list_all(inventory, &namespace_prefix(&format!("{ns}-empty")), 2).await;
    assert!(nothing.is_empty(), "an empty prefix listed {nothing:?}");
}

/// Key parts that an encoding or a pattern language could get wrong.
const AWKWARD_PARTS: &[&str] = &[
    "plain",
    "a|b",
    "100%",
    "%7C",
    "*",
    "?",
    "[ab]",
    "]",
    "back\\slash",
    "ünïcødé 🔑",
    "{hot}",
    "line\nbreak",
    "",
];

/// Listed keys are idem's text of a key: [`Key::parse`] of a listed key rebuilds it, and it
/// names the record written, for keys whose namespace, scope and parts hold `|`, `%`, glob
/// characters, braces, a backslash, a line break or non-ASCII text. A namespace that the
/// prefix would match as an unescaped glob pattern is not listed.
async fn listed_keys_parse_back_to_the_keys_written(ctx: Context) {
    let Some(inventory) = inventory(&ctx) else {
        return;
    };
    let now = SystemClock.now();
    let base = ctx.handle().namespace().to_owned();
    let ns = format!("{base}-*?[ab]\\%|ü");
    let mut written = Vec::new();
    for (i, part) in AWKWARD_PARTS.iter().enumerate() {
        let key = KeyBuilder::new(&ns, "charge|*")
            .scope(Some("tenant|%*"))
            .part(*part)
            .finish()
            .expect("short keys are valid");
        reserve(&ctx, &key, &format!("awkward-{i}"), now + HOUR, now).await;
        written.push(key);
    }
    // `-zzz` `q` `a` `%` match `-*` `?` `[ab]` `\%`: listed only if the prefix is taken as a
    // pattern.
    let decoy = format!("{base}-zzzqa%|ü");
    reserve(&ctx, &key_in(&decoy, "charge|*"), "decoy", now + HOUR, now).await;

    let listed = list_all(inventory, &namespace_prefix(&ns), 5).await;
    let keys = assert_lists_exactly(&ctx, &written, &listed).await;
    for listed in &keys {
        let parsed = Key::parse(listed.as_str())
            .unwrap_or_else(|error| panic!("listed key `{listed}` does not parse: {error}"));
        assert_eq!(&parsed, listed, "a listed key parses back to itself");
    }
    // A store lists every key as written, or (a view under a key digest) none.
    let verbatim = keys.iter().zip(&written).filter(|(l, w)| l == w).count();
    assert!(
        verbatim == 0 || verbatim == written.len(),
        "some keys were listed as written and others not: {keys:?} for {written:?}"
    );
}

/// A record the store cannot decode is listed with `StoreError::Corrupt`, under a key that
/// `get` fails on the same way, and the records next to it are still listed.
async fn a_listing_reports_a_corrupt_record(ctx: Context) {
    let Some(inventory) = inventory(&ctx) else {
        return;
    };
    let ns = ctx.handle().namespace().to_owned();
    let corrupt = key_in(&ns, "corrupt");
    if !ctx.target().corrupt(&corrupt).await {
        eprintln!("conformance: this store cannot hold a malformed record; check passes vacuously");
        return;
    }
    let now = SystemClock.now();
    let healthy = key_in(&ns, "healthy");
    complete(&ctx, &healthy, Outcome::Aborted, now, now + HOUR).await;

    let listed = list_all(inventory, &namespace_prefix(&ns), 100).await;
    let (broken, sound): (Vec<Entry>, Vec<Entry>) =
        listed.into_iter().partition(|(_, entry)| entry.is_err());
    match broken.as_slice() {
        [(key, Err(StoreError::Corrupt(_)))] => {
            let got = ctx.store().get(key).await;
            assert!(
                matches!(got, Err(StoreError::Corrupt(_))),
                "`{key}` was listed as corrupt, but `get` gives {got:?}"
            );
        }
        other => panic!("the corrupt record must be listed once as `Corrupt`, got {other:?}"),
    }
    assert_lists_exactly(&ctx, &[healthy], &sound).await;
}
