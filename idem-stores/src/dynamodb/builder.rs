//! `DynamoDbStoreBuilder`: the table, key prefix, attribute names and timeouts of a store.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::Client;

use super::{AttributeNames, DynamoDbStore, SortKey};

/// How long connecting to DynamoDB may take when the client does not say: 3 s, the SDK's own
/// default where it sets one.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// How long one attempt of a request may take when the client does not say: 3 s. DynamoDB
/// answers in milliseconds; an endpoint that accepts and never answers would otherwise hold a
/// call for as long as the connection lives.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a request may take, the SDK's retries included, when the client does not say: 10 s.
pub const DEFAULT_OPERATION_TIMEOUT: Duration = Duration::from_secs(10);

/// Builds a [`DynamoDbStore`] with a key prefix, other attribute names or other timeouts; start
/// from [`DynamoDbStore::builder`].
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
    sort_key: Option<SortKey>,
    connect_timeout: Option<Duration>,
    attempt_timeout: Option<Duration>,
    operation_timeout: Option<Duration>,
}

impl DynamoDbStoreBuilder {
    pub(crate) fn new(client: Client, table: String) -> Self {
        DynamoDbStoreBuilder {
            client,
            table,
            prefix: String::new(),
            names: AttributeNames::default(),
            sort_key: None,
            connect_timeout: None,
            attempt_timeout: None,
            operation_timeout: None,
        }
    }

    /// How long connecting may take. Default: the client's connect timeout, or
    /// [`DEFAULT_CONNECT_TIMEOUT`] when it has none.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// How long one attempt of a request may take before the SDK gives up on it (and may
    /// retry). Default: the client's operation attempt timeout, or [`DEFAULT_ATTEMPT_TIMEOUT`]
    /// when it has none.
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = Some(timeout);
        self
    }

    /// How long a request may take, retries included. Default: the client's operation
    /// timeout, or [`DEFAULT_OPERATION_TIMEOUT`] when it has none.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = Some(timeout);
        self
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

    /// Uses a table whose primary key has a sort key too (default: none), as a single-table
    /// design has: one half of the key holds the record's key, the other one value for every
    /// record ([`SortKey`]). [`AttributeNames::key`] stays the partition key's name.
    ///
    /// ```no_run
    /// # fn demo(client: aws_sdk_dynamodb::Client) {
    /// use idem_stores::dynamodb::{DynamoDbStore, SortKey};
    /// // Powertools' `sort_key_attr="sk"` with `static_pk_value="idempotency#payments"`.
    /// let store = DynamoDbStore::builder(client, "app")
    ///     .sort_key(SortKey::holding_key("sk", "idempotency#payments"))
    ///     .build();
    /// # }
    /// ```
    pub fn sort_key(mut self, sort_key: SortKey) -> Self {
        self.sort_key = Some(sort_key);
        self
    }

    /// The store, on a copy of the client whose timeouts are the ones set here, else the
    /// client's own, else the defaults above.
    pub fn build(self) -> DynamoDbStore {
        let config = self.client.config();
        let current = config
            .timeout_config()
            .cloned()
            .unwrap_or_else(|| TimeoutConfig::builder().build());
        let timeouts = current
            .to_builder()
            .connect_timeout(
                self.connect_timeout
                    .or(current.connect_timeout())
                    .unwrap_or(DEFAULT_CONNECT_TIMEOUT),
            )
            .operation_attempt_timeout(
                self.attempt_timeout
                    .or(current.operation_attempt_timeout())
                    .unwrap_or(DEFAULT_ATTEMPT_TIMEOUT),
            )
            .operation_timeout(
                self.operation_timeout
                    .or(current.operation_timeout())
                    .unwrap_or(DEFAULT_OPERATION_TIMEOUT),
            )
            .build();
        let client = Client::from_conf(config.to_builder().timeout_config(timeouts).build());
        DynamoDbStore::from_parts(
            client,
            self.table.into(),
            self.prefix.into(),
            Arc::new(self.names),
            self.sort_key,
        )
    }
}
