//! What to say when a single-table design's partition (`--partition-value`) holds no item at
//! all: most likely a value the service does not use, which would otherwise list as "no
//! records match" without a word on why.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::types::AttributeValue;
use idem_stores::dynamodb::DynamoDbStore;

/// How many items the hint reads to name the partition values the table's items have.
const SAMPLE: i32 = 100;

/// How many of those values the hint names.
const NAMED: usize = 5;

/// When `store` reads one partition (a sort key holding the records' keys, with
/// `--partition-value`) and that partition holds no item at all, what to say: that it is
/// empty, and the partition values a sample of the table's items have. `None` when the
/// partition holds items, when the store reads no one partition, or when the table can't be
/// asked.
pub(crate) async fn empty_partition(store: &DynamoDbStore) -> Option<String> {
    let sort_key = store.sort_key().filter(|sort_key| sort_key.holds_key())?;
    let partition = &store.names().key;
    let value = sort_key.value();
    let found = store
        .client()
        .query()
        .table_name(store.table())
        .key_condition_expression("#p = :v")
        .expression_attribute_names("#p", partition)
        .expression_attribute_values(":v", AttributeValue::S(value.to_owned()))
        .limit(1)
        .send()
        .await
        .ok()?;
    if found.count() > 0 {
        return None;
    }
    let sample = store
        .client()
        .scan()
        .table_name(store.table())
        .projection_expression("#p")
        .expression_attribute_names("#p", partition)
        .limit(SAMPLE)
        .send()
        .await
        .ok()?;
    let values: BTreeSet<&str> = sample
        .items()
        .iter()
        .filter_map(|item| item.get(partition)?.as_s().ok())
        .map(String::as_str)
        .collect();
    let elsewhere = if values.is_empty() {
        "; the table holds no items at all".to_owned()
    } else {
        let named: Vec<String> = values
            .iter()
            .take(NAMED)
            .map(|value| format!("`{value}`"))
            .collect();
        format!(
            "; its items have {partition} {}{}",
            named.join(", "),
            if values.len() > NAMED { ", ..." } else { "" }
        )
    };
    Some(format!(
        "the partition {partition} = `{value}` of DynamoDB table `{}` holds no items: is \
         --partition-value the value the service's `SortKey` gives every record (Powertools' \
         static_pk_value)?{elsewhere}",
        store.table()
    ))
}
