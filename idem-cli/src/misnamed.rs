//! What to say when a DynamoDB table's key or items are named otherwise than the command reads
//! them: which `--attribute` or `--sort-key` option is missing.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::types::KeyType;
use idem_stores::dynamodb::DynamoDbStore;

use crate::attribute_names::{field_list, fields, name_of};

/// The fields every record item has, whatever its state.
const EVERY_ITEM: &[&str] = &["state", "fingerprint", "live_until"];

/// How many items [`diagnose`] reads to see how the table names its attributes.
const SAMPLE: i32 = 25;

/// What `--attribute key=` or `--sort-key` option the command lacks to name the items of
/// `store`'s table, from its key schema alone (one `DescribeTable`): a partition key named
/// otherwise, or a sort key the command does not know or names otherwise. `None` when the
/// key fits, or when the table can't be asked.
pub(crate) async fn key_mismatch(store: &DynamoDbStore) -> Option<String> {
    let names = store.names();
    let (partition, sort) = table_key(store).await.unwrap_or_default();
    match (sort, store.sort_key()) {
        (Some(sort), None) => {
            return Some(format!(
                "the DynamoDB table `{}` has sort key `{sort}`, and idem reads it without one: \
                 pass --sort-key {sort} with --partition-value VALUE when the sort key holds \
                 the records' keys (Powertools' static_pk_value), or --sort-value VALUE when \
                 the partition key does, as the service's `SortKey` says",
                store.table()
            ))
        }
        (sort, Some(expected)) if sort.as_deref() != Some(expected.attribute()) => {
            return Some(format!(
                "the DynamoDB table `{}` has {}, and idem reads sort key `{}`: pass the \
                 --sort-key the service's `SortKey` names{}",
                store.table(),
                match &sort {
                    Some(sort) => format!("sort key `{sort}`"),
                    None => "no sort key".to_owned(),
                },
                expected.attribute(),
                if sort.is_none() { ", or none" } else { "" }
            ))
        }
        _ => {}
    }
    if let Some(key) = partition {
        if key != names.key {
            return Some(format!(
                "the DynamoDB table `{}` has partition key `{key}`, and idem reads `{}`: pass \
                 --attribute key={key}, with an --attribute FIELD=NAME for each other \
                 attribute the service names otherwise (fields: {})",
                store.table(),
                names.key,
                field_list()
            ));
        }
    }
    None
}

/// What `--attribute` or `--sort-key` option the command is missing to read `store`'s table,
/// if the table says so: a partition key named otherwise, a sort key the command does not
/// know, or items that lack attributes every record has. `None` when the names fit, or when
/// the table can't be asked.
pub(crate) async fn diagnose(store: &DynamoDbStore) -> Option<String> {
    if let Some(mismatch) = key_mismatch(store).await {
        return Some(mismatch);
    }
    let names = store.names();
    let sample = store
        .client()
        .scan()
        .table_name(store.table())
        .limit(SAMPLE)
        .send()
        .await
        .ok()?;
    let present: BTreeSet<&str> = sample
        .items()
        .iter()
        .flat_map(|item| item.keys())
        .map(String::as_str)
        .collect();
    if present.is_empty() {
        return None;
    }
    let missing: Vec<(&str, String)> = EVERY_ITEM
        .iter()
        .map(|field| (*field, name_of(names, field)))
        .filter(|(_, name)| !present.contains(name.as_str()))
        .collect();
    let (first, _) = missing.first()?;
    let ours: BTreeSet<String> = fields().map(|field| name_of(names, field)).collect();
    let theirs: Vec<String> = present
        .iter()
        .filter(|name| !ours.contains(**name))
        .map(|name| format!("`{name}`"))
        .collect();
    let missing: Vec<String> = missing
        .iter()
        .map(|(field, name)| format!("`{name}` ({field})"))
        .collect();
    Some(format!(
        "the items of DynamoDB table `{}` have no attribute {}{}: the service names its \
         attributes otherwise. Pass --attribute FIELD=NAME for each, as the service sets \
         `AttributeNames` (--attribute {first}=NAME; fields: {})",
        store.table(),
        missing.join(", "),
        if theirs.is_empty() {
            String::new()
        } else {
            format!(", and hold {}", theirs.join(", "))
        },
        field_list()
    ))
}

/// The table's partition key and sort key, if DynamoDB says.
async fn table_key(store: &DynamoDbStore) -> Option<(Option<String>, Option<String>)> {
    let described = store
        .client()
        .describe_table()
        .table_name(store.table())
        .send()
        .await
        .ok()?;
    let schema = described.table()?.key_schema();
    let named = |key_type: KeyType| {
        schema
            .iter()
            .find(|element| element.key_type() == &key_type)
            .map(|element| element.attribute_name().to_owned())
    };
    Some((named(KeyType::Hash), named(KeyType::Range)))
}
