//! `Store::contains`, the key-only read a client over its quota is asked with: it says whether
//! a record is stored, in every state the protocol leaves one in, and agrees with `get`.

use std::time::Duration;

use super::Context;
use idem_core::store::{Claim, Completed, InProgress, Outcome, OwnerToken, Reservation};
use idem_core::{Clock as _, Fingerprint, SystemClock};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[check!(contains_agrees_with_get_in_every_state)];

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
        Outcome::Ok(b"\"done\"".to_vec()),
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
