//! `SortKey`: a table whose primary key has a sort key too, as single-table designs have, and
//! the primary key of a record's item in it.

use aws_sdk_dynamodb::types::AttributeValue;

use super::codec::Item;

/// The longest partition key DynamoDB accepts, in bytes.
pub(crate) const MAX_PARTITION_KEY_LEN: usize = 2048;

/// The longest sort key DynamoDB accepts, in bytes.
pub(crate) const MAX_SORT_KEY_LEN: usize = 1024;

/// The sort key of a table with a composite primary key, and which half of the key holds the
/// record's key: the other half holds one value, the same for every record.
///
/// Powertools' layout (`sort_key_attr` with `static_pk_value`) keeps every record under one
/// partition key value and the idempotency key in the sort key, so that a `Query` reads them
/// without touching the table's other items:
///
/// ```
/// use idem_stores::dynamodb::SortKey;
/// let sort_key = SortKey::holding_key("sk", "idempotency#payments");
/// assert_eq!(sort_key.attribute(), "sk");
/// assert!(sort_key.holds_key());
/// ```
///
/// The reverse keeps the idempotency key in the partition key and one sort key value, for a
/// table whose items are spread by partition key:
///
/// ```
/// use idem_stores::dynamodb::SortKey;
/// let sort_key = SortKey::fixed("sk", "IDEMPOTENCY");
/// assert_eq!(sort_key.value(), "IDEMPOTENCY");
/// assert!(!sort_key.holds_key());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortKey {
    attribute: String,
    value: String,
    holds_key: bool,
}

impl SortKey {
    /// The sort key `attribute` (a string) holds the record's key, and the partition key holds
    /// `partition_value` for every record: Powertools' `sort_key_attr` and `static_pk_value`.
    /// A key is then at most 1024 bytes with the store's prefix, DynamoDB's limit for a sort
    /// key; listing and purging `Query` the one partition.
    pub fn holding_key(attribute: impl Into<String>, partition_value: impl Into<String>) -> Self {
        SortKey {
            attribute: attribute.into(),
            value: partition_value.into(),
            holds_key: true,
        }
    }

    /// The sort key `attribute` (a string) holds `value` for every record, and the partition
    /// key holds the record's key. Listing and purging `Scan` the table, keeping the items
    /// with this sort key value.
    pub fn fixed(attribute: impl Into<String>, value: impl Into<String>) -> Self {
        SortKey {
            attribute: attribute.into(),
            value: value.into(),
            holds_key: false,
        }
    }

    /// The sort key's attribute name.
    pub fn attribute(&self) -> &str {
        &self.attribute
    }

    /// The value every record has in the other half of the key: the partition key's when the
    /// sort key holds the record's key, else the sort key's.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Whether the sort key holds the record's key (else the partition key does).
    pub fn holds_key(&self) -> bool {
        self.holds_key
    }
}

/// A store's primary key: the partition key attribute, and its sort key if the table has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TableKey {
    partition: String,
    sort: Option<SortKey>,
}

impl TableKey {
    pub(crate) fn new(partition: String, sort: Option<SortKey>) -> Self {
        TableKey { partition, sort }
    }

    /// The partition key's attribute.
    pub(crate) fn partition(&self) -> &str {
        &self.partition
    }

    /// The sort key, if the table has one.
    pub(crate) fn sort(&self) -> Option<&SortKey> {
        self.sort.as_ref()
    }

    /// The attribute that holds the record's key (with the store's prefix).
    pub(crate) fn key_attribute(&self) -> &str {
        match &self.sort {
            Some(sort) if sort.holds_key => &sort.attribute,
            _ => &self.partition,
        }
    }

    /// The attribute that holds one value for every record, and that value, if the table
    /// has a sort key.
    pub(crate) fn fixed(&self) -> Option<(&str, &str)> {
        let sort = self.sort.as_ref()?;
        let attribute = if sort.holds_key {
            &self.partition
        } else {
            &sort.attribute
        };
        Some((attribute, &sort.value))
    }

    /// Whether the records all share one partition key value, which a `Query` reads.
    pub(crate) fn one_partition(&self) -> bool {
        self.sort.as_ref().is_some_and(SortKey::holds_key)
    }

    /// The longest stored key DynamoDB accepts in [`key_attribute`](Self::key_attribute).
    pub(crate) fn max_key_len(&self) -> usize {
        if self.one_partition() {
            MAX_SORT_KEY_LEN
        } else {
            MAX_PARTITION_KEY_LEN
        }
    }

    /// The primary key of the item whose stored key is `stored`: the attributes that name an
    /// item in `GetItem`, `UpdateItem`, `DeleteItem` and `ExclusiveStartKey`, and that every
    /// item written starts from.
    pub(crate) fn primary_key(&self, stored: &str) -> Item {
        let mut key = Item::from([(
            self.key_attribute().to_owned(),
            AttributeValue::S(stored.to_owned()),
        )]);
        if let Some((attribute, value)) = self.fixed() {
            key.insert(attribute.to_owned(), AttributeValue::S(value.to_owned()));
        }
        key
    }

    /// The stored key in `item` (an item or a `LastEvaluatedKey`), if it has one.
    pub(crate) fn stored_key(&self, item: &Item) -> Option<String> {
        match item.get(self.key_attribute())? {
            AttributeValue::S(text) => Some(text.clone()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_goes_where_the_sort_key_says() {
        let plain = TableKey::new("pk".into(), None);
        assert_eq!(plain.key_attribute(), "pk");
        assert_eq!(plain.fixed(), None);
        assert_eq!(plain.primary_key("a|k").len(), 1);
        assert_eq!(plain.max_key_len(), MAX_PARTITION_KEY_LEN);

        let powertools = TableKey::new("pk".into(), Some(SortKey::holding_key("sk", "idem")));
        assert_eq!(powertools.key_attribute(), "sk");
        assert_eq!(powertools.fixed(), Some(("pk", "idem")));
        assert!(powertools.one_partition());
        assert_eq!(powertools.max_key_len(), MAX_SORT_KEY_LEN);
        let key = powertools.primary_key("a|k");
        assert_eq!(key["sk"], AttributeValue::S("a|k".into()));
        assert_eq!(key["pk"], AttributeValue::S("idem".into()));
        assert_eq!(powertools.stored_key(&key).as_deref(), Some("a|k"));

        let fixed = TableKey::new("pk".into(), Some(SortKey::fixed("sk", "IDEM")));
        assert_eq!(fixed.key_attribute(), "pk");
        assert_eq!(fixed.fixed(), Some(("sk", "IDEM")));
        assert!(!fixed.one_partition());
        let key = fixed.primary_key("a|k");
        assert_eq!(key["pk"], AttributeValue::S("a|k".into()));
        assert_eq!(key["sk"], AttributeValue::S("IDEM".into()));
    }
}
