//! `idem` on DynamoDB (moto): records written through a handle on a store with a key prefix,
//! then read, listed, released, forgotten and purged by the binary.

use std::sync::Arc;

use idem_conformance::Target;
use idem_core::Key;
use idem_stores::dynamodb::{AttributeNames, DynamoDbStore, SortKey};
use idem_test_servers::dynamodb::TestDynamo;

use crate::support::{self, Idem, Subject};

/// `idem --store dynamodb://TABLE --region us-east-1 --endpoint ENDPOINT` on `dynamo`'s
/// server, with its static credentials in the environment.
fn on_table(dynamo: &TestDynamo, table: &str) -> Idem {
    support::idem().dynamodb(table, dynamo.moto.endpoint())
}

/// Creates `store`'s table and completes one call on it; returns the call's key.
async fn one_record(store: DynamoDbStore) -> Key {
    store.create_table().await.expect("the table is created");
    let idem = idem_core::Idempotency::from_arc(Arc::new(store));
    support::records::completed(&idem, "charge", "order-1").await
}

/// A table of its own (`TABLE-suffix`) in a single-table design, the sort key `sk` under the
/// partition `idempotency#payments`, holding one completed record; returns the table's name
/// and the record's key.
async fn sort_key_table(dynamo: &TestDynamo, suffix: &str) -> (String, Key) {
    let table = format!("{}-{suffix}", dynamo.table());
    let store = DynamoDbStore::builder(dynamo.client.clone(), table.as_str())
        .sort_key(SortKey::holding_key("sk", "idempotency#payments"))
        .build();
    (table, one_record(store).await)
}

/// `list`, `stats` and `get KEY` with `cli` each exit 2, saying every one of `said`.
#[track_caller]
fn each_read_refused(cli: &Idem, key: &Key, said: &[&str]) {
    for args in [&["list"][..], &["stats"], &["get", key.as_str()]] {
        let run = cli.run(args);
        run.exits(2);
        for text in said {
            run.says(text);
        }
    }
}

/// `cli` reads `done`, the one completed record, in `list`, `get` and `stats`; returns what
/// `list --json` printed.
#[track_caller]
fn reads_the_one_record(cli: &Idem, done: &Key) -> serde_json::Value {
    let listed = cli.run(&["list", "--json"]).exits(0).json();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["key"], done.as_str());
    let doc = cli.run(&["get", done.as_str(), "--json"]).exits(0).json();
    assert_eq!(doc["outcome"], "ok", "{doc}");
    assert_eq!(cli.run(&["stats", "--json"]).exits(0).json()["total"], 1);
    listed
}

/// A store with a key prefix on a fresh table, and `idem --store dynamodb://TABLE --region
/// --endpoint --prefix` with static credentials in the environment.
async fn start() -> Option<Subject> {
    let dynamo = TestDynamo::start().await?;
    let store = DynamoDbStore::builder(dynamo.client.clone(), dynamo.table())
        .prefix("billing")
        .build();
    let cli = on_table(&dynamo, dynamo.table()).store(["--prefix", "billing"]);
    Some(Subject::new(Arc::new(store), cli, dynamo))
}

/// An item the store can't read, on a table without a prefix.
async fn corrupt_record_is_reported_and_forgotten() {
    let Some(dynamo) = TestDynamo::start().await else {
        return;
    };
    let cli = on_table(&dynamo, dynamo.table());
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
    let subject = |prefix: &str| {
        let store = DynamoDbStore::builder(dynamo.client.clone(), dynamo.table())
            .prefix(prefix)
            .build();
        let cli = on_table(&dynamo, dynamo.table()).store(["--prefix", prefix]);
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
    let cli = on_table(&dynamo, dynamo.table()).store(["--prefix", "billing"]);
    let subject = Subject::new(Arc::new(store), cli, ());
    support::scenarios::unkeyed_entries_are_listed_and_counted(
        &subject,
        &[(long.clone().into_bytes(), long)],
    )
    .await;
}

/// The attribute names of a table shared with Powertools for AWS Lambda.
fn powertools_names() -> AttributeNames {
    AttributeNames {
        key: "id".into(),
        ttl: "expiration".into(),
        state: "status".into(),
        body: "data".into(),
        fingerprint: "validation".into(),
        live_until: "in_progress_expiration".into(),
        ..AttributeNames::default()
    }
}

/// A table written with other attribute names is read with `--attribute` for each; read
/// without them, the command says which option is missing, for `get`, `list` and `stats`.
async fn other_attribute_names_are_named_with_attribute() {
    let Some(dynamo) = TestDynamo::start().await else {
        return;
    };
    let table = format!("{}-pt", dynamo.table());
    let store = DynamoDbStore::builder(dynamo.client.clone(), table.as_str())
        .attribute_names(powertools_names())
        .build();
    let done = one_record(store).await;
    let cli = |extra: &[&str]| on_table(&dynamo, &table).store(extra.iter().copied());

    each_read_refused(
        &cli(&[]),
        &done,
        &["partition key `id`", "--attribute key=id"],
    );
    let key_only = cli(&["--attribute", "key=id"]);
    for args in [&["list", "--json"][..], &["stats"], &["get", done.as_str()]] {
        key_only
            .run(args)
            .exits(2)
            .says("`state` (state)")
            .says("`status`")
            .says("--attribute state=NAME");
    }

    let named = cli(&[
        "--attribute",
        "key=id",
        "--attribute",
        "ttl=expiration",
        "--attribute",
        "state=status",
        "--attribute",
        "body=data",
        "--attribute",
        "fingerprint=validation",
        "--attribute",
        "live_until=in_progress_expiration",
    ]);
    let listed = reads_the_one_record(&named, &done);
    assert_eq!(listed[0]["state"], "completed");
    named
        .run(&["--attribute", "partition=id", "list"])
        .exits(2)
        .says("no attribute field");
}

/// A single-table design (Powertools' `sort_key_attr` with `static_pk_value`): the command
/// reads it with `--sort-key` and `--partition-value`, and without them says so.
async fn a_sort_key_table_is_read_with_sort_key() {
    let Some(dynamo) = TestDynamo::start().await else {
        return;
    };
    let (table, done) = sort_key_table(&dynamo, "st").await;
    let cli = |extra: &[&str]| on_table(&dynamo, &table).store(extra.iter().copied());

    each_read_refused(
        &cli(&[]),
        &done,
        &["sort key `sk`", "--sort-key sk with --partition-value"],
    );
    cli(&["--sort-key", "sk"])
        .run(&["list"])
        .exits(2)
        .says("--partition-value VALUE");
    cli(&[
        "--sort-key",
        "SK",
        "--partition-value",
        "idempotency#payments",
    ])
    .run(&["list"])
    .exits(2)
    .says("has sort key `sk`, and idem reads sort key `SK`");

    let named = cli(&[
        "--sort-key",
        "sk",
        "--partition-value",
        "idempotency#payments",
    ]);
    reads_the_one_record(&named, &done);
    named.run(&["forget", done.as_str(), "--yes"]).exits(0);
    named.run(&["get", done.as_str()]).exits(3);
}

/// A `--partition-value` the service does not use lists nothing, and says that its partition
/// holds no items and which partition values the table's items have; the right one lists the
/// records with no such word.
async fn an_empty_partition_is_said_to_be_empty() {
    let Some(dynamo) = TestDynamo::start().await else {
        return;
    };
    let (table, done) = sort_key_table(&dynamo, "ep").await;
    let cli = |partition: &str| {
        on_table(&dynamo, &table).store(["--sort-key", "sk", "--partition-value", partition])
    };

    let wrong = cli("idempotency#payment").run(&["list"]);
    wrong
        .exits(0)
        .says("no records match")
        .says("the partition pk = `idempotency#payment` of DynamoDB table")
        .says("holds no items")
        .says("--partition-value")
        .says("its items have pk `idempotency#payments`");
    let json = cli("idempotency#payment").run(&["list", "--json"]);
    assert_eq!(json.exits(0).json(), serde_json::json!([]));
    json.says("holds no items");

    let right = cli("idempotency#payments").run(&["list"]);
    right.exits(0).prints(done.as_str());
    assert!(!right.stderr.contains("holds no items"), "{right:#?}");
}

/// Credentials and region from a named profile of the SDK's files (`AWS_PROFILE`,
/// `AWS_CONFIG_FILE`, `AWS_SHARED_CREDENTIALS_FILE`), as the default chain reads them; with
/// none at all, a usage error that names the ways to give some.
async fn credentials_come_from_a_profile() {
    let Some(dynamo) = TestDynamo::start().await else {
        return;
    };
    let done = support::records::completed(
        &idem_core::Idempotency::from_arc(dynamo.store()),
        "charge",
        "order-1",
    )
    .await;
    let dir = std::env::temp_dir().join(format!(
        "idem-cli-profile-{}-{}",
        std::process::id(),
        idem_core::store::OwnerToken::generate().as_str()
    ));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let config = dir.join("config");
    let credentials = dir.join("credentials");
    std::fs::write(&config, "[profile ops]\nregion = us-east-1\n").expect("the config file");
    std::fs::write(
        &credentials,
        "[ops]\naws_access_key_id = test\naws_secret_access_key = test\n",
    )
    .expect("the credentials file");
    let url = format!("dynamodb://{}", dynamo.table());
    let cli = support::idem()
        .store([
            "--store",
            url.as_str(),
            "--endpoint",
            dynamo.moto.endpoint(),
        ])
        .env("AWS_CONFIG_FILE", config.to_str().expect("a UTF-8 path"))
        .env(
            "AWS_SHARED_CREDENTIALS_FILE",
            credentials.to_str().expect("a UTF-8 path"),
        );
    let listed = cli
        .clone()
        .env("AWS_PROFILE", "ops")
        .run(&["list", "--json"])
        .exits(0)
        .json();
    assert_eq!(listed[0]["key"], done.as_str(), "{listed}");
    cli.env("AWS_PROFILE", "ops")
        .run(&["get", done.as_str()])
        .exits(0)
        .prints("completed");
    let bare = support::idem().store([
        "--store",
        url.as_str(),
        "--endpoint",
        dynamo.moto.endpoint(),
        "--region",
        "us-east-1",
    ]);
    bare.run(&["list"])
        .exits(2)
        .says("needs credentials")
        .says("AWS_PROFILE");
    let _ = std::fs::remove_dir_all(&dir);
}

support::scenarios::store_tests!(
    dynamodb: start,
    credentials_come_from_a_profile,
    other_attribute_names_are_named_with_attribute,
    a_sort_key_table_is_read_with_sort_key,
    an_empty_partition_is_said_to_be_empty,
    corrupt_record_is_reported_and_forgotten,
    purge_stays_inside_its_prefix,
    keys_that_are_no_keys_are_listed_and_counted,
);
