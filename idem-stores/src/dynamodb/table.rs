//! `create_table`, a table for development and tests, and `verify`, which checks a table at
//! start-up.

use std::time::Duration;

use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    TimeToLiveSpecification, TimeToLiveStatus,
};
use idem_core::{BoxError, StoreError};

use super::error::{credentials_refused, Misconfigured, RequestFailed};
use super::DynamoDbStore;

/// How long [`DynamoDbStore::create_table`] waits for a new table to become active.
const ACTIVE_WITHIN: Duration = Duration::from_secs(120);

impl DynamoDbStore {
    /// Creates the store's table if it does not exist: a string partition key (and the string
    /// sort key of [`DynamoDbStoreBuilder::sort_key`](super::DynamoDbStoreBuilder::sort_key),
    /// if the store has one), on-demand billing, and DynamoDB's TTL sweeper on the TTL attribute. Waits until the table is
    /// active. Returns `false` if the table was already there: its TTL is then enabled if it
    /// was not, and the table is [verified](DynamoDbStore::verify).
    ///
    /// Meant for development and tests; production tables belong in your infrastructure code,
    /// with the same key and TTL settings.
    pub async fn create_table(&self) -> Result<bool, BoxError> {
        let mut key = vec![(self.names().key.as_str(), KeyType::Hash)];
        if let Some(sort_key) = self.sort_key() {
            key.push((sort_key.attribute(), KeyType::Range));
        }
        let mut create = self
            .client()
            .create_table()
            .table_name(self.table())
            .billing_mode(BillingMode::PayPerRequest);
        for (attribute, key_type) in key {
            create = create
                .attribute_definitions(
                    AttributeDefinition::builder()
                        .attribute_name(attribute)
                        .attribute_type(ScalarAttributeType::S)
                        .build()?,
                )
                .key_schema(
                    KeySchemaElement::builder()
                        .attribute_name(attribute)
                        .key_type(key_type)
                        .build()?,
                );
        }
        let created = create.send().await;
        match created {
            Ok(_) => {}
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|e| e.is_resource_in_use_exception()) =>
            {
                // An existing table (perhaps still being created by another process) gets
                // its TTL if it has none, and must fit the store.
                self.wait_until_active().await?;
                if self.ttl_attribute().await?.is_none() {
                    self.enable_ttl().await?;
                }
                self.verify().await?;
                return Ok(false);
            }
            Err(error) => return Err(RequestFailed::new("CreateTable", self.table(), error).into()),
        }
        self.wait_until_active().await?;
        self.enable_ttl().await?;
        Ok(true)
    }

    /// Waits until the table is active.
    async fn wait_until_active(&self) -> Result<(), BoxError> {
        self.client()
            .wait_until_table_exists()
            .table_name(self.table())
            .wait(ACTIVE_WITHIN)
            .await
            .map_err(|error| RequestFailed::new("DescribeTable", self.table(), error))?;
        Ok(())
    }

    /// Checks that the table exists and fits the store: a string partition key named as the
    /// store's key attribute, the store's string sort key or none if it has none
    /// ([`DynamoDbStoreBuilder::sort_key`](super::DynamoDbStoreBuilder::sort_key)), and TTL
    /// enabled on the store's TTL attribute. Call
    /// it at start-up, so that a misconfiguration stops the service with a message that names
    /// it, rather than failing every call.
    ///
    /// A misconfiguration is [`StoreError::Rejected`] with a [`Misconfigured`]; a request that
    /// could not be made is [`StoreError::Backend`]. Refused credentials are a
    /// [`Misconfigured::Credentials`] here; at run time they stay retryable, since new keys or
    /// policies take a while to propagate. Needs `dynamodb:DescribeTable` and
    /// `dynamodb:DescribeTimeToLive`.
    pub async fn verify(&self) -> Result<(), StoreError> {
        let table = self.table().to_owned();
        let described = self
            .client()
            .describe_table()
            .table_name(&table)
            .send()
            .await
            .map_err(|error| {
                let (code, message) = (error.code(), error.message());
                match credentials_refused(&table, code.unwrap_or(""), message.unwrap_or("")) {
                    Some(refused) => refused.into(),
                    None => self.failed("DescribeTable", error),
                }
            })?;
        let Some(description) = described.table() else {
            return Err(Misconfigured::MissingTable { table }.into());
        };
        let key = &self.names().key;
        let mut partition_key = None;
        let mut sort_key = None;
        for element in description.key_schema() {
            match element.key_type() {
                KeyType::Hash => partition_key = Some(element.attribute_name()),
                _ => sort_key = Some(element.attribute_name()),
            }
        }
        let type_of = |attribute: Option<&str>| {
            description
                .attribute_definitions()
                .iter()
                .find(|definition| Some(definition.attribute_name()) == attribute)
                .map(|definition| definition.attribute_type().clone())
        };
        let key_type = type_of(partition_key);
        if partition_key != Some(key.as_str()) || key_type != Some(ScalarAttributeType::S) {
            let found = match (partition_key, key_type) {
                (Some(name), Some(kind)) => format!("it has `{name}`, of type {}", kind.as_str()),
                _ => "it has no partition key".to_owned(),
            };
            return Err(Misconfigured::WrongKey {
                table,
                expected: key.clone(),
                found,
            }
            .into());
        }
        match (self.sort_key(), sort_key) {
            (None, None) => {}
            (None, Some(found)) => {
                return Err(Misconfigured::SortKey {
                    table,
                    sort_key: format!("`{found}`"),
                }
                .into())
            }
            (Some(expected), found) => {
                let found_type = type_of(found);
                if found != Some(expected.attribute()) || found_type != Some(ScalarAttributeType::S)
                {
                    let found = match (found, found_type) {
                        (Some(name), Some(kind)) => {
                            format!("it has `{name}`, of type {}", kind.as_str())
                        }
                        _ => "it has none".to_owned(),
                    };
                    return Err(Misconfigured::WrongSortKey {
                        table,
                        expected: expected.attribute().to_owned(),
                        found,
                    }
                    .into());
                }
            }
        }
        let ttl = &self.names().ttl;
        match self.ttl_attribute().await? {
            Some(enabled_on) if &enabled_on == ttl => Ok(()),
            enabled_on => Err(Misconfigured::TtlDisabled {
                table,
                attribute: ttl.clone(),
                enabled_on,
            }
            .into()),
        }
    }

    /// The attribute DynamoDB's TTL is enabled (or being enabled) on, if any.
    async fn ttl_attribute(&self) -> Result<Option<String>, StoreError> {
        let described = self
            .client()
            .describe_time_to_live()
            .table_name(self.table())
            .send()
            .await
            .map_err(|error| self.failed("DescribeTimeToLive", error))?;
        let Some(ttl) = described.time_to_live_description() else {
            return Ok(None);
        };
        let enabled = matches!(
            ttl.time_to_live_status(),
            Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
        );
        Ok(ttl.attribute_name().filter(|_| enabled).map(str::to_owned))
    }

    /// Enables DynamoDB's TTL on the store's TTL attribute.
    async fn enable_ttl(&self) -> Result<(), BoxError> {
        let enabled = self
            .client()
            .update_time_to_live()
            .table_name(self.table())
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .enabled(true)
                    .attribute_name(&self.names().ttl)
                    .build()?,
            )
            .send()
            .await;
        match enabled {
            Ok(_) => Ok(()),
            // Another process enabled it first.
            Err(error)
                if error
                    .message()
                    .is_some_and(|m| m.contains("already enabled")) =>
            {
                Ok(())
            }
            Err(error) => Err(RequestFailed::new("UpdateTimeToLive", self.table(), error).into()),
        }
    }
}
