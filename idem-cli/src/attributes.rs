//! DynamoDB attribute names: `--attribute FIELD=NAME` on the command line, and what to say
//! when a table's items are named otherwise than the command reads them.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::types::KeyType;
use idem_stores::dynamodb::{AttributeNames, DynamoDbStore, SortKey};

use crate::args::StoreArgs;
use crate::failure::Failure;

/// The attribute name of one field of `AttributeNames`, to read or set.
type Slot = fn(&mut AttributeNames) -> &mut String;

/// The fields `--attribute` sets, as `AttributeNames` names them, with a way to set each.
const FIELDS: &[(&str, Slot)] = &[
    ("key", |names| &mut names.key),
    ("state", |names| &mut names.state),
    ("owner", |names| &mut names.owner),
    ("fingerprint", |names| &mut names.fingerprint),
    ("live_until", |names| &mut names.live_until),
    ("fencing_token", |names| &mut names.fencing_token),
    ("attempt", |names| &mut names.attempt),
    ("ttl", |names| &mut names.ttl),
    ("outcome", |names| &mut names.outcome),
    ("body", |names| &mut names.body),
    ("steps", |names| &mut names.steps),
    ("steps_kept_until", |names| &mut names.steps_kept_until),
    ("steps_ttl", |names| &mut names.steps_ttl),
];

/// The fields every record item has, whatever its state.
const EVERY_ITEM: &[&str] = &["state", "fingerprint", "live_until"];

/// How many items [`diagnose`] reads to see how the table names its attributes.
const SAMPLE: i32 = 25;

/// `--attribute`'s value, `FIELD=NAME`, as clap parses it.
pub(crate) fn parse(text: &str) -> Result<(String, String), String> {
    let (field, name) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not FIELD=NAME (say key=id)"))?;
    if !FIELDS.iter().any(|(known, _)| *known == field) {
        return Err(format!(
            "`{field}` is no attribute field; the fields: {}",
            field_list()
        ));
    }
    if name.is_empty() {
        return Err(format!("`{text}` names no attribute"));
    }
    Ok((field.to_owned(), name.to_owned()))
}

/// The attribute names the defaults and `pairs` (from `--attribute`) make.
pub(crate) fn names(pairs: &[(String, String)]) -> Result<AttributeNames, Failure> {
    let mut names = AttributeNames::default();
    for (field, name) in pairs {
        let (_, slot) = FIELDS
            .iter()
            .find(|(known, _)| known == field)
            .ok_or_else(|| Failure::usage(format!("`{field}` is no attribute field")))?;
        *slot(&mut names) = name.clone();
    }
    Ok(names)
}

/// The sort key `--sort-key` with `--partition-value` or `--sort-value` make, if any.
pub(crate) fn sort_key(args: &StoreArgs) -> Result<Option<SortKey>, Failure> {
    let Some(attribute) = &args.sort_key else {
        if args.partition_value.is_some() || args.sort_value.is_some() {
            return Err(Failure::usage(
                "--partition-value and --sort-value go with --sort-key NAME, the table's sort \
                 key",
            ));
        }
        return Ok(None);
    };
    match (&args.partition_value, &args.sort_value) {
        (Some(partition), None) => Ok(Some(SortKey::holding_key(attribute, partition))),
        (None, Some(sort)) => Ok(Some(SortKey::fixed(attribute, sort))),
        (Some(_), Some(_)) => Err(Failure::usage(
            "--partition-value and --sort-value say where the records' keys go, so only one \
             of them is given: --partition-value when the sort key holds the keys, \
             --sort-value when the partition key does",
        )),
        (None, None) => Err(Failure::usage(format!(
            "--sort-key {attribute} needs the value every record has in the other half of the \
             key: --partition-value VALUE when the sort key holds the records' keys \
             (Powertools' static_pk_value), or --sort-value VALUE when the partition key does"
        ))),
    }
}

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
    let ours: BTreeSet<String> = FIELDS
        .iter()
        .map(|(field, _)| name_of(names, field))
        .collect();
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

/// The attribute name `names` give `field` (one of [`FIELDS`]).
fn name_of(names: &AttributeNames, field: &str) -> String {
    let mut names = names.clone();
    FIELDS
        .iter()
        .find(|(known, _)| *known == field)
        .map(|(_, slot)| slot(&mut names).clone())
        .unwrap_or_default()
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

/// The fields, comma-separated.
fn field_list() -> String {
    FIELDS
        .iter()
        .map(|(field, _)| *field)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_read_as_field_equals_name() {
        let pairs = vec![
            parse("key=id").unwrap(),
            parse("ttl=expiration").unwrap(),
            parse("live_until=in_progress_expiration").unwrap(),
        ];
        let names = names(&pairs).unwrap();
        assert_eq!(names.key, "id");
        assert_eq!(names.ttl, "expiration");
        assert_eq!(names.live_until, "in_progress_expiration");
        assert_eq!(names.state, AttributeNames::default().state);
        assert!(parse("id").is_err());
        assert!(parse("partition=id").unwrap_err().contains("steps_ttl"));
        assert!(parse("key=").is_err());
    }
}
