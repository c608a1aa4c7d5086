//! `idem` on DynamoDB (moto): records written through a handle on a store with a key prefix,
//! then read, listed, released, forgotten and purged by the binary.

mod support;

use std::sync::Arc;

use idem_conformance::Target;
use idem_stores::dynamodb::DynamoDbStore;
use idem_tests::dynamodb::TestDynamo;
use support::{Cli, Subject};

/// A store with a key prefix on a fresh table, and `idem --store dynamodb://TABLE --region
/// --endpoint --prefix` with static credentials in the environment.
async fn start() -> Option<Subject> {
    let dynamo = TestDynamo::start().await?;
    let store = DynamoDbStore::builder(dynamo.client.clone(), dynamo.table())
        .prefix("billing")
        .build();
    let url = format!("dynamodb://{}", dynamo.table());
    let cli = Cli::new([
        "--store",
        url.as_str(),
        "--region",
        "us-east-1",
        "--endpoint",
        dynamo.moto.endpoint(),
        "--prefix",
        "billing",
    ])
    .env("AWS_ACCESS_KEY_ID", "test")
    .env("AWS_SECRET_ACCESS_KEY", "test");
    Some(Subject::new(Arc::new(store), cli, dynamo))
}

/// An item the store can't read, on a table without a prefix.
async fn corrupt_record_is_reported_and_forgotten() {
    let Some(dynamo) = TestDynamo::start().await else {
        return;
    };
    let url = format!("dynamodb://{}", dynamo.table());
    let cli = Cli::new([
        "--store",
        url.as_str(),
        "--region",
        "us-east-1",
        "--endpoint",
        dynamo.moto.endpoint(),
    ])
    .env("AWS_ACCESS_KEY_ID", "test")
    .env("AWS_SECRET_ACCESS_KEY", "test");
    let subject = Subject::new(dynamo.store(), cli, ());
    let key = support::records::key(&subject.idem, "charge", "order-9");
    assert!(dynamo.corrupt(&key).await);
    support::scenarios::corrupt_record_is_reported_and_forgotten(&subject, &key).await;
}

/// Two prefixes on one table: a purge under one leaves the other's items.
async fn purge_stays_inside_its_prefix() {
    let Some(dynamo) = TestDynamo::start().await else {
        return;
    };
    let url = format!("dynamodb://{}", dynamo.table());
    let subject = |prefix: &str| {
        let store = DynamoDbStore::builder(dynamo.client.clone(), dynamo.table())
            .prefix(prefix)
            .build();
        let cli = Cli::new([
            "--store",
            url.as_str(),
            "--region",
            "us-east-1",
            "--endpoint",
            dynamo.moto.endpoint(),
            "--prefix",
            prefix,
        ])
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
        Subject::new(Arc::new(store), cli, ())
    };
    let (a, b) = (subject("svc_a"), subject("svc_b"));
    support::scenarios::purge_stays_inside_its_prefix(&a, &b).await;
}

/// An item under the store's prefix whose partition key holds no idempotency key after it,
/// written with the SDK: one of 2000 bytes (a partition key holds 2048 at most, and is always
/// UTF-8).
async fn keys_that_are_no_keys_are_listed_and_counted() {
    let Some(dynamo) = TestDynamo::start().await else {
        return;
    };
    let store = DynamoDbStore::builder(dynamo.client.clone(), dynamo.table())
        .prefix("billing")
        .build();
    let mut prefix = store.item_key(&idem_core::Key::parse("|").expect("a key"));
    prefix.pop();
    let long = format!("idem|charge|-|{}", "a".repeat(2000));
    dynamo
        .client
        .put_item()
        .table_name(dynamo.table())
        .item(
            store.names().key.clone(),
            aws_sdk_dynamodb::types::AttributeValue::S(format!("{prefix}{long}")),
        )
        .send()
        .await
        .expect("a raw put succeeds");
    let url = format!("dynamodb://{}", dynamo.table());
    let cli = Cli::new([
        "--store",
        url.as_str(),
        "--region",
        "us-east-1",
        "--endpoint",
        dynamo.moto.endpoint(),
        "--prefix",
        "billing",
    ])
    .env("AWS_ACCESS_KEY_ID", "test")
    .env("AWS_SECRET_ACCESS_KEY", "test");
    let subject = Subject::new(Arc::new(store), cli, ());
    support::scenarios::unkeyed_entries_are_listed_and_counted(
        &subject,
        &[(long.clone().into_bytes(), long)],
    )
    .await;
}

support::scenarios::store_tests!(
    start,
    corrupt_record_is_reported_and_forgotten,
    purge_stays_inside_its_prefix,
    keys_that_are_no_keys_are_listed_and_counted,
);
