//! The DynamoDB store's limits and configuration: results too large for an item and keys
//! too long for one are refused before any request, attribute names and the key prefix are
//! configurable, and a missing table is refused, not retried.

use aws_sdk_dynamodb::types::TimeToLiveStatus;
use idem_core::{
    store::{Store},
    Call, Error, Idempotency, StoreError,
};
use idem_stores::dynamodb::{AttributeNames, DynamoDbStore, ItemTooLarge, MAX_ITEM_SIZE};
use idem_test_servers::dynamodb::{unique_table_name, TestDynamo};

use super::dynamodb_store::{claim, completed, fingerprint, key, s, NOW};

async fn oversized_results_are_refused_before_any_request() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());

    // Just under the limit: stored and replayed.
    let big = "x".repeat(MAX_ITEM_SIZE - 2_000);
    let call = Call::new(
        idem.key("big").part("fits").finish().unwrap(),
        fingerprint("fits"),
    );
    let stored = idem
        .run(call.clone(), async { Ok::<_, Error>(big.clone()) })
        .await
        .unwrap();
    assert!(!stored.replayed);
    let replayed = idem
        .run(call, async { Ok::<_, Error>(String::new()) })
        .await
        .unwrap();
    assert!(replayed.replayed);
    assert_eq!(replayed.value.len(), big.len());

    // Over the limit: the reserve goes out, the completion does not.
    let huge = "x".repeat(MAX_ITEM_SIZE);
    let call = Call::new(
        idem.key("big").part("huge").finish().unwrap(),
        fingerprint("huge"),
    );
    let before = db.requests.count();
    let err = idem
        .run(call, async { Ok::<_, Error>(huge) })
        .await
        .unwrap_err();
    assert_eq!(
        db.requests.operations_since(before),
        vec!["PutItem".to_owned(), "PutItem".to_owned()],
        "the reservation, then the record that the call left no outcome"
    );
    let Error::NotRecorded { cause, .. } = &err else {
        panic!("expected Error::NotRecorded, got {err:?}")
    };
    let Error::Rejected { source, .. } = &**cause else {
        panic!("expected a Rejected cause, got {cause:?}")
    };
    assert!(err.ran_without_record() && !err.is_retryable(), "{err}");
    assert_eq!(err.http_status(), 500);
    let too_large = source
        .downcast_ref::<ItemTooLarge>()
        .expect("an ItemTooLarge");
    assert!(too_large.size > MAX_ITEM_SIZE);
    assert!(source.to_string().contains("item limit"), "{source}");

    // A retry is told the call left no outcome to replay, never "in progress", and nothing
    // runs again.
    let retry = Call::new(
        idem.key("big").part("huge").finish().unwrap(),
        fingerprint("huge"),
    );
    let told = idem
        .run(retry, async { Ok::<_, Error>(String::from("ran again")) })
        .await
        .unwrap_err();
    assert!(matches!(told, Error::Aborted { .. }), "{told:?}");
    assert_eq!(
        told.problem_type(),
        idem_protocol::problem::ProblemType::NotRecorded
    );

    // At the store: nothing is sent.
    let key = key("huge-direct");
    let claim = claim("h", NOW + 30_000, NOW);
    db.store.reserve(&key, &claim).await.unwrap();
    let before = db.requests.count();
    let refused = db
        .store
        .complete(
            &key,
            claim.record().owner(),
            &completed("h", &vec![b'x'; MAX_ITEM_SIZE], NOW + 60_000),
        )
        .await;
    assert!(
        matches!(refused, Err(StoreError::Rejected(_))),
        "{refused:?}"
    );
    assert_eq!(
        db.requests.count(),
        before,
        "no request for an oversized item"
    );
}

async fn attribute_names_and_key_prefix_are_configurable() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let names = AttributeNames {
        key: "PK".into(),
        state: "status".into(), // a reserved word in DynamoDB expressions
        ttl: "expires".into(),
        ..AttributeNames::default()
    };
    let store = DynamoDbStore::builder(db.client.clone(), unique_table_name())
        .prefix("idem#")
        .attribute_names(names)
        .build();
    assert!(store.create_table().await.unwrap());
    assert!(
        !store.create_table().await.unwrap(),
        "a second create finds the table"
    );
    let ttl = db
        .client
        .describe_time_to_live()
        .table_name(store.table())
        .send()
        .await
        .unwrap();
    let ttl = ttl.time_to_live_description().unwrap();
    assert_eq!(ttl.attribute_name(), Some("expires"));
    assert_eq!(ttl.time_to_live_status(), Some(&TimeToLiveStatus::Enabled));

    let idem = Idempotency::new(store.clone());
    let call = Call::new(
        idem.key("charge").part("o-1").finish().unwrap(),
        fingerprint("o-1"),
    );
    idem.run(call.clone(), async { Ok::<_, Error>(1u64) })
        .await
        .unwrap();
    assert!(
        idem.run(call.clone(), async { Ok::<_, Error>(2u64) })
            .await
            .unwrap()
            .replayed
    );

    let item = db
        .client
        .get_item()
        .table_name(store.table())
        .key("PK", s(&format!("idem#|{}", call.key())))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .expect("the item under the prefixed key");
    assert_eq!(item["status"], s("completed"));
    assert!(item.contains_key("expires"));
    assert!(!item.contains_key("ttl"));
}

async fn a_missing_table_is_refused_not_retried() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let store = DynamoDbStore::new(db.client.clone(), "idem-no-such-table");
    let idem = Idempotency::new(store);
    let call = Call::new(
        idem.key("charge").part("o-1").finish().unwrap(),
        fingerprint("o-1"),
    );
    let err = idem
        .run(call, async { Ok::<_, Error>(1u64) })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Rejected { .. }), "{err:?}");
    assert!(!err.is_retryable());
    let mut report = err.to_string();
    let mut cause = std::error::Error::source(&err);
    while let Some(inner) = cause {
        report.push_str(&format!(": {inner}"));
        cause = inner.source();
    }
    assert!(report.contains("does not exist"), "{report}");
    assert!(report.contains("idem-no-such-table"), "{report}");
}

async fn an_overlong_prefixed_key_is_refused_before_any_request() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let store = DynamoDbStore::builder(db.client.clone(), db.table())
        .prefix("p".repeat(2_100))
        .build();
    let before = db.requests.count();
    let err = store.get(&key("long")).await.unwrap_err();
    assert!(err.to_string().contains("2048"), "{err}");
    assert_eq!(db.requests.count(), before);
}

idem_tests::module_tests! {
    async oversized_results_are_refused_before_any_request,
    async attribute_names_and_key_prefix_are_configurable,
    async a_missing_table_is_refused_not_retried,
    async an_overlong_prefixed_key_is_refused_before_any_request,
}
