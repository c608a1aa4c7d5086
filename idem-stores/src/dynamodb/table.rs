//! `create_table`: a table for development and tests.

use std::time::Duration;

use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    TimeToLiveSpecification,
};
use idem_core::BoxError;

use super::error::RequestFailed;
use super::DynamoDbStore;

/// How long [`DynamoDbStore::create_table`] waits for a new table to become active.
const ACTIVE_WITHIN: Duration = Duration::from_secs(120);

impl DynamoDbStore {
    /// Creates the store's table if it does not exist: a string partition key, on-demand
    /// billing, and DynamoDB's TTL sweeper on the TTL attribute. Waits until the table is
    /// active. Returns `false` if the table was already there (it is left as it is).
    ///
    /// Meant for development and tests; production tables belong in your infrastructure code,
    /// with the same key and TTL settings.
    pub async fn create_table(&self) -> Result<bool, BoxError> {
        let names = self.names();
        let created = self
            .client()
            .create_table()
            .table_name(self.table())
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(&names.key)
                    .attribute_type(ScalarAttributeType::S)
                    .build()?,
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name(&names.key)
                    .key_type(KeyType::Hash)
                    .build()?,
            )
            .billing_mode(BillingMode::PayPerRequest)
            .send()
            .await;
        match created {
            Ok(_) => {}
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|e| e.is_resource_in_use_exception()) =>
            {
                return Ok(false)
            }
            Err(error) => return Err(RequestFailed::new("CreateTable", self.table(), error).into()),
        }
        self.client()
            .wait_until_table_exists()
            .table_name(self.table())
            .wait(ACTIVE_WITHIN)
            .await
            .map_err(|error| RequestFailed::new("DescribeTable", self.table(), error))?;
        self.client()
            .update_time_to_live()
            .table_name(self.table())
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .enabled(true)
                    .attribute_name(&names.ttl)
                    .build()?,
            )
            .send()
            .await
            .map_err(|error| RequestFailed::new("UpdateTimeToLive", self.table(), error))?;
        Ok(true)
    }
}
