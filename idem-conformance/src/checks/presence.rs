//! `Store::contains`, the key-only read a client over its quota is asked with: it says whether
//! a record is stored, in every state the protocol leaves one in, and agrees with `get`. And
//! `Store::delete_if`, the operator's delete: it takes the record read, never a later one.

use std::time::Duration;

use super::Context;
use idem_core::store::{Claim, Completed, InProgress, Outcome, OwnerToken, Record, Reservation};
use idem_core::{Clock as _, Fingerprint, SystemClock};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(contains_agrees_with_get_in_every_state),
    check!(a_conditional_delete_takes_only_the_record_read),
];

/// Asserts that `contains` and `get` agree on `key`, and that a record `is_stored`.
async fn agree(ctx: &Context, key: &idem_core::Key, is_stored: bool, when: &str) {
    let store = ctx.store();
    let contained = store.contains(key).await.unwrap();
    let got = store.get(key).await.unwrap().is_some();
    assert_eq!(
        (contained, got),
        (is_stored, is_stored),
        "contains and get disagree, or are wrong, {when}"
    );
}

/// `contains` is false for a free key, true while a call holds it and once its outcome is
/// stored, false again after a release or a delete.
async fn contains_agrees_with_get_in_every_state(ctx: Context) {
    let store = ctx.store();
    let now = SystemClock.now();
    let fingerprint = Fingerprint::of("presence").expect("text fingerprints");
    let claim = |owner: OwnerToken| {
        let record = InProgress::new(owner, fingerprint, now + Duration::from_secs(60))
            .with_fencing_token(idem_core::store::propose_fencing_token(now));
        Claim::new(record, now)
    };

    let key = ctx.key("presence-completed");
    agree(&ctx, &key, false, "before anything is stored").await;
    let first = claim(OwnerToken::generate());
    assert!(matches!(
        store.reserve(&key, &first).await.unwrap(),
        Reservation::Reserved(_)
    ));
    agree(&ctx, &key, true, "while the key is held").await;
    let done = Completed::new(
        fingerprint,
        Outcome::ok(b"\"done\"".to_vec()),
        now + Duration::from_secs(600),
    );
    store
        .complete(&key, first.record().owner(), &done)
        .await
        .unwrap();
    agree(&ctx, &key, true, "once the outcome is stored").await;
    store.delete(&key).await.unwrap();
    agree(&ctx, &key, false, "after a delete").await;

    let key = ctx.key("presence-released");
    let held = claim(OwnerToken::generate());
    assert!(matches!(
        store.reserve(&key, &held).await.unwrap(),
        Reservation::Reserved(_)
    ));
    store.release(&key, held.record().owner()).await.unwrap();
    agree(
        &ctx,
        &key,
        false,
        "after a release of a record without steps",
    )
    .await;
}

/// `delete_if` deletes the record read, in progress or completed, and leaves a record written
/// after the read (another reservation of the key, a later completion) and a free key alone.
async fn a_conditional_delete_takes_only_the_record_read(ctx: Context) {
    let store = ctx.store();
    let now = SystemClock.now();
    let fingerprint = Fingerprint::of("conditional").expect("text fingerprints");
    let claim = || {
        let record = InProgress::new(
            OwnerToken::generate(),
            fingerprint,
            now + Duration::from_secs(60),
        )
        .with_fencing_token(idem_core::store::propose_fencing_token(now));
        Claim::new(record, now)
    };
    let read = |key| async move { store.get(&key).await.unwrap().expect("a record") };

    let key = ctx.key("conditional-held");
    assert!(
        !store
            .delete_if(&key, &Record::InProgress(claim().record().clone()))
            .await
            .unwrap(),
        "a free key: nothing to delete"
    );
    let first = claim();
    store.reserve(&key, &first).await.unwrap();
    let read_first = read(key.clone()).await;
    store.release(&key, first.record().owner()).await.unwrap();
    let second = claim();
    store.reserve(&key, &second).await.unwrap();
    assert!(
        !store.delete_if(&key, &read_first).await.unwrap(),
        "a reservation made after the read was deleted"
    );
    let now_held = read(key.clone()).await;
    assert!(
        idem_core::store::is_same_record(&now_held, &Record::InProgress(second.record().clone())),
        "the later reservation must stand: {now_held:?}"
    );
    assert!(
        store.delete_if(&key, &now_held).await.unwrap(),
        "the record read is deleted"
    );
    assert!(store.get(&key).await.unwrap().is_none());

    let key = ctx.key("conditional-completed");
    let held = claim();
    store.reserve(&key, &held).await.unwrap();
    let expires_at = now + Duration::from_secs(600);
    let done = Completed::new(fingerprint, Outcome::ok(b"\"done\"".to_vec()), expires_at);
    store
        .complete(&key, held.record().owner(), &done)
        .await
        .unwrap();
    let other_completion = Completed::new(
        fingerprint,
        Outcome::ok(b"\"done\"".to_vec()),
        expires_at + Duration::from_millis(1),
    );
    assert!(
        !store
            .delete_if(&key, &Record::Completed(other_completion))
            .await
            .unwrap(),
        "another completion of the key was taken for the one read"
    );
    assert!(
        !store
            .delete_if(&key, &Record::InProgress(held.record().clone()))
            .await
            .unwrap(),
        "the reservation read before the completion was taken for it"
    );
    let completed = read(key.clone()).await;
    assert!(store.delete_if(&key, &completed).await.unwrap());
    assert!(store.get(&key).await.unwrap().is_none());
}
