//! One page of the store's items, for listing and purging: a `Query` of the one partition when
//! every record shares a partition key value, else a `Scan` that keeps the store's items.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use idem_core::StoreError;

use super::codec::Item;
use super::DynamoDbStore;

/// What a page reads: the store's items whose stored key starts with `prefix`, among them
/// those `filter` keeps (over `names` and `values`), from `start` on, reading at most `limit`
/// items.
pub(crate) struct PageRequest {
    /// What every stored key read starts with (the store's prefix, and the listing's).
    pub(crate) prefix: String,
    /// A further filter expression, if any, parenthesised if it has an `OR` at its top
    /// (DynamoDB refuses redundant parentheses).
    pub(crate) filter: Option<String>,
    /// The filter's attribute names (`#k` and `#fx` are the page's own).
    pub(crate) names: HashMap<String, String>,
    /// The filter's values (`:prefix` and `:fixed` are the page's own).
    pub(crate) values: Item,
    /// Where the page starts (`ExclusiveStartKey`).
    pub(crate) start: Option<Item>,
    /// How many items it reads at most, filtered or not.
    pub(crate) limit: Option<u32>,
    /// Whether to read the stored key alone.
    pub(crate) keys_only: bool,
}

/// A page read: its items, and where the next one starts (`LastEvaluatedKey`).
pub(crate) struct Page {
    pub(crate) items: Vec<Item>,
    pub(crate) next: Option<Item>,
}

impl DynamoDbStore {
    /// One consistent page of the store's items. When the records share one partition key
    /// value ([`SortKey::holding_key`](super::SortKey::holding_key)), a `Query` reads that
    /// partition from the prefix on and touches no other item of a shared table; otherwise a
    /// `Scan` reads the table and keeps the items under the prefix (and with the sort key's
    /// value, when the table has one).
    pub(crate) async fn page(&self, request: PageRequest) -> Result<Page, StoreError> {
        let table_key = self.table_key();
        let PageRequest {
            prefix,
            filter,
            mut names,
            mut values,
            start,
            limit,
            keys_only,
        } = request;
        names.insert("#k".into(), table_key.key_attribute().to_owned());
        values.insert(":prefix".into(), AttributeValue::S(prefix));
        let mut selection = vec!["begins_with(#k, :prefix)".to_owned()];
        if let Some((attribute, value)) = table_key.fixed() {
            names.insert("#fx".into(), attribute.to_owned());
            values.insert(":fixed".into(), AttributeValue::S(value.to_owned()));
            selection.insert(0, "#fx = :fixed".to_owned());
        }
        let limit = limit.map(|limit| i32::try_from(limit.max(1)).unwrap_or(i32::MAX));
        // The fixed half of the key is known: the stored key names the item.
        let projection = keys_only.then(|| "#k".to_owned());
        if table_key.one_partition() {
            let output = self
                .client()
                .query()
                .table_name(self.table())
                .consistent_read(true)
                .key_condition_expression(selection.join(" AND "))
                .set_filter_expression(filter)
                .set_projection_expression(projection)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(Some(values))
                .set_exclusive_start_key(start)
                .set_limit(limit)
                .send()
                .await
                .map_err(|error| self.failed("Query", error))?;
            return Ok(Page {
                items: output.items.unwrap_or_default(),
                next: output.last_evaluated_key,
            });
        }
        selection.extend(filter);
        let output = self
            .client()
            .scan()
            .table_name(self.table())
            .consistent_read(true)
            .filter_expression(selection.join(" AND "))
            .set_projection_expression(projection)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .set_exclusive_start_key(start)
            .set_limit(limit)
            .send()
            .await
            .map_err(|error| self.failed("Scan", error))?;
        Ok(Page {
            items: output.items.unwrap_or_default(),
            next: output.last_evaluated_key,
        })
    }
}
