//! DynamoDB caps an item at 400 KB, so a record the store reads is small whatever it holds;
//! the store still refuses a completed record over a call's longest outcome, as every store
//! does.

use std::time::{Duration, SystemTime};

use aws_sdk_dynamodb::types::AttributeValue;
use idem_core::{
    store::{Claim, InProgress, OwnerToken, Store, Timestamp},
    Call, Error, Fingerprint, Idempotency, StoreError,
};
use idem_test_servers::dynamodb::TestDynamo;

use crate::plant_and_measure::too_long;

/// Over DynamoDB's item limit (400 KB, names and values together).
const OVER_ITEM_LIMIT: usize = 500 * 1024;

async fn an_item_over_400_kb_cannot_be_stored() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let refused = db
        .client
        .put_item()
        .table_name(db.store.table())
        .item(&db.store.names().key, AttributeValue::S("oversized".into()))
        .item(
            &db.store.names().body,
            AttributeValue::S("x".repeat(OVER_ITEM_LIMIT)),
        )
        .send()
        .await;
    let error = refused.expect_err("DynamoDB refuses an item over 400 KB");
    let shown = format!("{error:?}");
    assert!(
        shown.contains("size"),
        "the refusal is the item's size: {shown}"
    );
}

async fn a_completed_record_over_the_limit_is_refused() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::new(db.store.clone());
    let key = idem.key("reports.render").part("r-1").finish().unwrap();
    let fingerprint = Fingerprint::of(&"r-1").unwrap();
    let body = "x".repeat(300 * 1024);
    idem.run(Call::new(key.clone(), fingerprint), async {
        Ok::<_, Error>(body)
    })
    .await
    .unwrap();

    let now = Timestamp::from_system_time(SystemTime::now());
    let claim = |max| {
        let record = InProgress::new(
            OwnerToken::generate(),
            fingerprint,
            now + Duration::from_secs(30),
        );
        Claim::new(record, now).with_max_outcome(max)
    };
    match db.store.reserve(&key, &claim(Some(1024))).await {
        Err(StoreError::Corrupt(reason)) => assert_eq!(reason, too_long(300 * 1024 + 2, 1024)),
        other => panic!("expected a corrupt record, got {other:?}"),
    }
    assert!(db
        .store
        .reserve(&key, &claim(Some(300 * 1024 + 2)))
        .await
        .is_ok());
}

idem_tests::module_tests! {
    async an_item_over_400_kb_cannot_be_stored,
    async a_completed_record_over_the_limit_is_refused,
}
