//! `DynamoDbStore`: the `Store` trait over conditional writes.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;
use idem_core::{
    store::{Claim, Completed, OwnerToken, Record, Reservation, Store, Timestamp},
    Key, StoreError,
};

use super::codec::{self, Item, IN_PROGRESS, MAX_ITEM_SIZE};
use super::error::{misconfiguration, ItemTooLarge, KeyTooLong, RequestFailed};
use super::failed::failed_item;
use super::sort_key::TableKey;
use super::{AttributeNames, DynamoDbStoreBuilder, SortKey};

/// The condition of `complete`, and the first part of every other write of the owner (release,
/// renew, a step): the record is in progress and held by the caller.
const OWNER_CONDITION: &str = "#st = :in_progress AND #own = :owner";

/// A [`Store`] in a DynamoDB table: one item per key, written only with conditional requests.
///
/// Built from an [`aws_sdk_dynamodb::Client`] you configure (credentials, region, endpoint,
/// retries) and a table whose partition key is a string attribute (`pk` unless
/// [`attribute_names`](DynamoDbStoreBuilder::attribute_names) says otherwise), with no sort
/// key unless [`sort_key`](DynamoDbStoreBuilder::sort_key) names it. See the
/// [module docs](super) for the item layout and the requests.
///
/// ```no_run
/// # async fn demo(client: aws_sdk_dynamodb::Client) -> Result<(), idem_core::BoxError> {
/// use idem_stores::dynamodb::DynamoDbStore;
/// let store = DynamoDbStore::new(client, "idempotency");
/// store.create_table().await?; // development only: make tables with your infrastructure code
/// let idem = idem_core::Idempotency::new(store);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct DynamoDbStore {
    pub(super) client: Client,
    pub(super) table: Arc<str>,
    prefix: Arc<str>,
    pub(super) names: Arc<AttributeNames>,
    pub(super) table_key: Arc<TableKey>,
}

impl DynamoDbStore {
    /// A store in `table`, reached through `client`, with the default [`AttributeNames`] and no
    /// key prefix.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self::builder(client, table).build()
    }

    /// Starts building a store in `table` with a key prefix or other attribute names.
    pub fn builder(client: Client, table: impl Into<String>) -> DynamoDbStoreBuilder {
        DynamoDbStoreBuilder::new(client, table.into())
    }

    pub(crate) fn from_parts(
        client: Client,
        table: Arc<str>,
        prefix: Arc<str>,
        names: Arc<AttributeNames>,
        sort_key: Option<SortKey>,
    ) -> Self {
        let table_key = Arc::new(TableKey::new(names.key.clone(), sort_key));
        DynamoDbStore {
            client,
            table,
            prefix,
            names,
            table_key,
        }
    }

    /// The prefix in front of every partition key.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The attribute names.
    pub fn names(&self) -> &AttributeNames {
        &self.names
    }

    /// The sort key, when the table has one ([`DynamoDbStoreBuilder::sort_key`]).
    pub fn sort_key(&self) -> Option<&SortKey> {
        self.table_key.sort()
    }

    /// The value of the attribute that holds `key` in its item (the partition key, or the sort
    /// key when [`SortKey::holds_key`]): the prefix and the key, delimited so that no prefix
    /// and key pair can equal another ([`Key::with_prefix`]).
    pub fn item_key(&self, key: &Key) -> String {
        key.with_prefix(&self.prefix)
    }

    /// The table's primary key: where a record's key goes.
    pub(crate) fn table_key(&self) -> &TableKey {
        &self.table_key
    }

    /// The primary key of `key`'s item, as `GetItem`, `UpdateItem` and `DeleteItem` take it:
    /// the attribute that holds the key, and the sort key's other half when the table has one.
    /// [`KeyTooLong`] (in [`StoreError::Rejected`]) when DynamoDB would refuse the key.
    pub fn primary_key(&self, key: &Key) -> Result<HashMap<String, AttributeValue>, StoreError> {
        let item_key = self.checked_item_key(key)?;
        Ok(self.table_key.primary_key(&item_key))
    }

    pub(crate) fn checked_item_key(&self, key: &Key) -> Result<String, StoreError> {
        let item_key = self.item_key(key);
        let limit = self.table_key.max_key_len();
        if item_key.len() > limit {
            return Err(StoreError::rejected(KeyTooLong {
                len: item_key.len(),
                limit,
            }));
        }
        Ok(item_key)
    }

    /// The store error for a failed request: a misconfiguration (a missing table, a key that
    /// does not match the table, refused credentials) is rejected, not retried; anything else
    /// is a backend failure.
    pub(crate) fn failed<E, R>(&self, operation: &'static str, error: SdkError<E, R>) -> StoreError
    where
        E: std::error::Error + ProvideErrorMetadata + Send + Sync + 'static,
        R: fmt::Debug + Send + Sync + 'static,
    {
        let code = error.code().unwrap_or_default();
        let message = error.message().unwrap_or_default();
        match misconfiguration(&self.table, &self.names.key, code, message) {
            Some(misconfigured) => misconfigured.into(),
            None => RequestFailed::new(operation, &self.table, error).into(),
        }
    }

    /// The answer to a request conditioned on [`OWNER_CONDITION`]: a failed condition means the
    /// key is no longer held by the owner, so the lease was lost.
    pub(crate) fn owner_checked<O, E, R>(
        &self,
        operation: &'static str,
        result: Result<O, SdkError<E, R>>,
        condition_failed: impl FnOnce(&E) -> bool,
    ) -> Result<(), StoreError>
    where
        E: std::error::Error + ProvideErrorMetadata + Send + Sync + 'static,
        R: fmt::Debug + Send + Sync + 'static,
    {
        match result {
            Ok(_) => Ok(()),
            Err(error) if error.as_service_error().is_some_and(condition_failed) => {
                Err(StoreError::LeaseLost)
            }
            Err(error) => Err(self.failed(operation, error)),
        }
    }

    /// The record `item` holds, its values taken out of it.
    pub(crate) fn decode(&self, item: Item) -> Result<Record, StoreError> {
        codec::decode(&self.names, item).map_err(StoreError::Corrupt)
    }

    /// The item under `key`, read consistently.
    pub(crate) async fn item(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&*self.table)
            .set_key(Some(self.primary_key(key)?))
            .consistent_read(true)
            .send()
            .await
            .map_err(|error| self.failed("GetItem", error))?;
        Ok(output.item)
    }

    /// The answer to a reserving put: `reservation` when it landed, the item that failed its
    /// condition when it did not.
    pub(crate) fn reserved_or_failed<O>(
        &self,
        result: Result<O, SdkError<PutItemError, HttpResponse>>,
        reservation: impl FnOnce() -> Reservation,
    ) -> Result<Result<Reservation, Option<Item>>, StoreError> {
        match result {
            Ok(_) => Ok(Ok(reservation())),
            Err(error) => match failed_item(error) {
                Ok(item) => Ok(Err(item)),
                Err(error) => Err(self.failed("PutItem", error)),
            },
        }
    }

    /// The answer to a conditional `DeleteItem`: `true` when it deleted the item, `false` when
    /// the item failed the condition (it changed, or is gone).
    pub(crate) fn deleted_or_failed<O>(
        &self,
        result: Result<O, SdkError<DeleteItemError, HttpResponse>>,
    ) -> Result<bool, StoreError> {
        match result {
            Ok(_) => Ok(true),
            Err(error) => match error.as_service_error() {
                Some(DeleteItemError::ConditionalCheckFailedException(_)) => Ok(false),
                _ => Err(self.failed("DeleteItem", error)),
            },
        }
    }

    /// Whether `item` is `record`, completed by `owner`: a completion retried by the client after
    /// its answer was lost finds its own write.
    fn completed_by(&self, item: Item, owner: &OwnerToken, record: &Completed) -> bool {
        codec::owner(&self.names, &item) == Some(owner.as_str())
            && matches!(self.decode(item), Ok(Record::Completed(found)) if found == *record)
    }

    /// The values of [`OWNER_CONDITION`].
    pub(crate) fn owner_values(owner: &OwnerToken) -> [(String, AttributeValue); 2] {
        [
            (":in_progress".into(), AttributeValue::S(IN_PROGRESS.into())),
            (
                ":owner".into(),
                AttributeValue::S(owner.as_str().to_owned()),
            ),
        ]
    }

    /// The names of [`OWNER_CONDITION`].
    pub(crate) fn owner_names(&self) -> [(String, String); 2] {
        [
            ("#st".into(), self.names.state.clone()),
            ("#own".into(), self.names.owner.clone()),
        ]
    }
}

#[async_trait]
impl Store for DynamoDbStore {
    fn name(&self) -> &'static str {
        "dynamodb"
    }

    /// A `Scan` a page, and the purge of the items that stopped counting, each deleted on its
    /// own condition (see the [module docs](super#listing-and-purging)).
    fn inventory(&self) -> Option<&dyn idem_core::store::Inventory> {
        Some(self)
    }

    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        self.reserve_key(key, claim).await
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        let item_key = self.checked_item_key(key)?;
        let item = codec::completed(
            &self.names,
            self.table_key.primary_key(&item_key),
            owner,
            record,
        )?;
        let size = codec::item_size(&item);
        if size > MAX_ITEM_SIZE {
            return Err(StoreError::rejected(ItemTooLarge {
                size,
                limit: MAX_ITEM_SIZE,
            }));
        }
        let result = self
            .client
            .put_item()
            .table_name(&*self.table)
            .set_item(Some(item))
            .condition_expression(OWNER_CONDITION)
            .set_expression_attribute_names(Some(self.owner_names().into()))
            .set_expression_attribute_values(Some(Self::owner_values(owner).into()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(error) => match failed_item(error) {
                Ok(found) => {
                    if found.is_some_and(|found| self.completed_by(found, owner, record)) {
                        Ok(())
                    } else {
                        Err(StoreError::LeaseLost)
                    }
                }
                Err(error) => Err(self.failed("PutItem", error)),
            },
        }
    }

    async fn release(&self, key: &Key, owner: &OwnerToken) -> Result<(), StoreError> {
        self.release_lease(key, owner).await
    }

    async fn record_step(
        &self,
        key: &Key,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) -> Result<(), StoreError> {
        self.put_step(key, owner, name, value, kept_until).await
    }

    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Timestamp,
    ) -> Result<(), StoreError> {
        self.renew_lease(key, owner, lease_until).await
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        self.item(key)
            .await?
            .map(|item| self.decode(item))
            .transpose()
    }

    /// A `DeleteItem` whose condition is what tells the item read from a later one (the
    /// DynamoDB copy of idem-core's `is_same_record`).
    async fn delete_if(&self, key: &Key, expected: &Record) -> Result<bool, StoreError> {
        let names = &self.names;
        let (state, (first_name, first), (second_name, second)) = match expected {
            Record::InProgress(held) => (
                IN_PROGRESS,
                (
                    &names.owner,
                    AttributeValue::S(held.owner().as_str().to_owned()),
                ),
                (&names.fencing_token, codec::number(held.fencing_token())),
            ),
            Record::Completed(completed) => (
                codec::COMPLETED,
                (
                    &names.fingerprint,
                    AttributeValue::S(completed.fingerprint().to_hex()),
                ),
                (&names.live_until, codec::time(completed.expires_at())),
            ),
            other => {
                return Err(StoreError::rejected(format!(
                    "the DynamoDB store cannot tell whether {other:?} is unchanged"
                )))
            }
        };
        let result = self
            .client
            .delete_item()
            .table_name(&*self.table)
            .set_key(Some(self.primary_key(key)?))
            .condition_expression("#st = :st AND #a = :a AND #b = :b")
            .expression_attribute_names("#st", &names.state)
            .expression_attribute_names("#a", first_name)
            .expression_attribute_names("#b", second_name)
            .expression_attribute_values(":st", AttributeValue::S(state.to_owned()))
            .expression_attribute_values(":a", first)
            .expression_attribute_values(":b", second)
            .send()
            .await;
        self.deleted_or_failed(result)
    }

    /// `dynamodb|`, the table, its key design (the partition key's attribute, and a sort
    /// key's attribute, value and role), then the key prefix: an item copied to another table,
    /// design or prefix does not open.
    fn sealing_scope(&self) -> String {
        let sort = match self.table_key.sort() {
            Some(sort) => format!(
                "{}={}{}",
                sort.attribute(),
                sort.value(),
                if sort.holds_key() { "+key" } else { "" }
            ),
            None => String::new(),
        };
        format!(
            "dynamodb|{}|{}|{sort}|{}",
            self.table,
            self.table_key.partition(),
            self.prefix
        )
    }

    /// A consistent `GetItem` of the item's key attributes alone, never the record's values.
    async fn contains(&self, key: &Key) -> Result<bool, StoreError> {
        let primary_key = self.primary_key(key)?;
        let mut request = self.client.get_item().table_name(&*self.table);
        let mut projection = Vec::with_capacity(primary_key.len());
        for (at, name) in primary_key.keys().enumerate() {
            projection.push(format!("#k{at}"));
            request = request.expression_attribute_names(format!("#k{at}"), name);
        }
        let output = request
            .set_key(Some(primary_key))
            .consistent_read(true)
            .projection_expression(projection.join(", "))
            .send()
            .await
            .map_err(|error| self.failed("GetItem", error))?;
        Ok(output.item.is_some())
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&*self.table)
            .set_key(Some(self.primary_key(key)?))
            .send()
            .await
            .map_err(|error| self.failed("DeleteItem", error))?;
        Ok(())
    }

    /// Polls the record's state with small consistent reads until it is no longer in progress
    /// or `timeout` passes, backing off from 10 ms to 200 ms.
    async fn changed(&self, key: &Key, timeout: Duration) -> Result<(), StoreError> {
        self.wait_for_change(key, timeout).await
    }
}

impl fmt::Debug for DynamoDbStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamoDbStore")
            .field("table", &self.table)
            .field("prefix", &self.prefix)
            .field("names", &self.names)
            .field("sort_key", &self.table_key.sort())
            .finish_non_exhaustive()
    }
}
