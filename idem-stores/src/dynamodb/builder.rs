//! `DynamoDbStoreBuilder`: the table, key prefix and attribute names of a store.

use std::sync::Arc;

use aws_sdk_dynamodb::Client;

use super::{AttributeNames, DynamoDbStore};

/// Builds a [`DynamoDbStore`] with a key prefix or other attribute names; start from
/// [`DynamoDbStore::builder`].
///
/// ```no_run
/// # fn demo(client: aws_sdk_dynamodb::Client) {
/// use idem_stores::dynamodb::DynamoDbStore;
/// let store = DynamoDbStore::builder(client, "shared-table").prefix("billing").build();
/// # }
/// ```
#[derive(Debug)]
pub struct DynamoDbStoreBuilder {
    client: Client,
    table: String,
    prefix: String,
    names: AttributeNames,
}

impl DynamoDbStoreBuilder {
    pub(crate) fn new(client: Client, table: String) -> Self {
        DynamoDbStoreBuilder {
            client,
            table,
            prefix: String::new(),
            names: AttributeNames::default(),
        }
    }

    /// Puts `prefix` in front of every partition key (default: none), so that idem's items
    /// can share a table with others.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Uses other attribute names (default: [`AttributeNames::default`]).
    pub fn attribute_names(mut self, names: AttributeNames) -> Self {
        self.names = names;
        self
    }

    /// The store.
    pub fn build(self) -> DynamoDbStore {
        DynamoDbStore::from_parts(
            self.client,
            self.table.into(),
            self.prefix.into(),
            Arc::new(self.names),
        )
    }
}
