//! DynamoDB tables that can't work with the store: named at start-up by `verify()`, and
//! refused at run time rather than retried as an outage.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};
use aws_sdk_dynamodb::Client;
use idem_core::{Call, Error, Fingerprint, Idempotency, StoreError};
use idem_stores::dynamodb::{AttributeNames, DynamoDbStore, Misconfigured};
use idem_test_servers::dynamodb::{unique_table_name, TestDynamo};

/// Creates a table with a partition key `hash` and, when given, a sort key `sort`, both
/// strings, without TTL.
async fn table(client: &Client, hash: &str, sort: Option<&str>) -> String {
    typed_table(client, hash, ScalarAttributeType::S, sort).await
}

/// Like [`table`], with a partition key of type `hash_type`.
async fn typed_table(
    client: &Client,
    hash: &str,
    hash_type: ScalarAttributeType,
    sort: Option<&str>,
) -> String {
    let name = unique_table_name();
    let mut create = client
        .create_table()
        .table_name(&name)
        .billing_mode(BillingMode::PayPerRequest);
    for (attribute, kind, attribute_type) in [
        (Some(hash), KeyType::Hash, hash_type),
        (sort, KeyType::Range, ScalarAttributeType::S),
    ] {
        let Some(attribute) = attribute else {
            continue;
        };
        create = create
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(attribute)
                    .attribute_type(attribute_type)
                    .build()
                    .unwrap(),
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name(attribute)
                    .key_type(kind)
                    .build()
                    .unwrap(),
            );
    }
    create.send().await.unwrap();
    name
}

/// Why `error` refused a misconfigured store; it must be that.
pub(super) fn misconfiguration(error: StoreError) -> Misconfigured {
    match error {
        StoreError::Rejected(source) => match source.downcast::<Misconfigured>() {
            Ok(misconfigured) => *misconfigured,
            Err(other) => panic!("rejected for another reason: {other}"),
        },
        other => panic!("not a misconfiguration: {other:?}"),
    }
}

/// A call on `store` is refused as not retryable, and its body never runs.
async fn refused_at_run_time(store: DynamoDbStore) {
    let idem = Idempotency::new(store);
    let call = Call::new(
        idem.key("charge").part("o-1").finish().unwrap(),
        Fingerprint::of(&"o-1").unwrap(),
    );
    let err = idem
        .run(call, async {
            panic!("the body must not run") as Result<u64, Error>
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Rejected { .. }), "{err:?}");
    assert!(!err.is_retryable());
}

async fn a_missing_table_is_named() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let store = DynamoDbStore::new(db.client.clone(), "idem-no-such-table");
    let found = misconfiguration(store.verify().await.unwrap_err());
    assert!(
        matches!(found, Misconfigured::MissingTable { .. }),
        "{found:?}"
    );
    assert!(found.to_string().contains("idem-no-such-table"), "{found}");
    refused_at_run_time(store).await;
}

async fn a_table_with_another_partition_key_is_named() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let name = table(&db.client, "id", None).await;
    let store = DynamoDbStore::new(db.client.clone(), name);
    let found = misconfiguration(store.verify().await.unwrap_err());
    assert!(matches!(found, Misconfigured::WrongKey { .. }), "{found:?}");
    assert!(found.to_string().contains("`id`"), "{found}");
    refused_at_run_time(store).await;
}

/// A partition key of the right name and the wrong type (a number) is named by `verify()`,
/// and refused at run time as a misconfiguration, not answered as a retryable outage.
async fn a_number_partition_key_is_named_and_refused_at_run_time() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let key = AttributeNames::default().key;
    let name = typed_table(&db.client, &key, ScalarAttributeType::N, None).await;
    let store = DynamoDbStore::new(db.client.clone(), name);
    let found = misconfiguration(store.verify().await.unwrap_err());
    assert!(matches!(found, Misconfigured::WrongKey { .. }), "{found:?}");
    assert!(found.to_string().contains("of type N"), "{found}");
    refused_at_run_time(store).await;
}

async fn a_table_with_a_sort_key_is_named() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let key = AttributeNames::default().key;
    let name = table(&db.client, &key, Some("sk")).await;
    let store = DynamoDbStore::new(db.client.clone(), name);
    let found = misconfiguration(store.verify().await.unwrap_err());
    assert!(matches!(found, Misconfigured::SortKey { .. }), "{found:?}");
    assert!(found.to_string().contains("sk"), "{found}");
    refused_at_run_time(store).await;
}

async fn a_table_without_ttl_is_named_and_create_table_enables_it() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let key = AttributeNames::default().key;
    let name = table(&db.client, &key, None).await;
    let store = DynamoDbStore::new(db.client.clone(), name);
    let found = misconfiguration(store.verify().await.unwrap_err());
    assert!(
        matches!(
            found,
            Misconfigured::TtlDisabled {
                enabled_on: None,
                ..
            }
        ),
        "{found:?}"
    );
    assert!(!store.create_table().await.unwrap(), "the table was there");
    store.verify().await.expect("TTL is now enabled");
    assert!(
        db.store.verify().await.is_ok(),
        "a table the store made fits it"
    );
}

idem_tests::module_tests! {
    async a_missing_table_is_named,
    async a_table_with_another_partition_key_is_named,
    async a_table_with_a_sort_key_is_named,
    async a_number_partition_key_is_named_and_refused_at_run_time,
    async a_table_without_ttl_is_named_and_create_table_enables_it,
}
