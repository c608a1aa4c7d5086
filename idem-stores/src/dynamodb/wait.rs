//! Waiting for an in-flight duplicate: polling the record's state with small reads.

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use idem_core::{Key, StoreError};

use super::codec::{self, IN_PROGRESS};
use super::DynamoDbStore;

/// The first pause between two reads of a caller waiting for an in-flight duplicate; each later
/// pause doubles, up to [`WAIT_POLL_MAX`].
const WAIT_POLL_FIRST: Duration = Duration::from_millis(10);
/// The longest pause between two reads of a waiting caller.
const WAIT_POLL_MAX: Duration = Duration::from_millis(200);

impl DynamoDbStore {
    /// Polls the record's state with small consistent reads (`GetItem` of the state and lease
    /// attributes only), backing off from 10 ms to 200 ms, until it is no longer in progress
    /// (or released with its steps kept) or `timeout` passes. Reads cost less than the failed conditional writes a reserve would.
    pub(crate) async fn wait_for_change(
        &self,
        key: &Key,
        timeout: Duration,
    ) -> Result<(), StoreError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut pause = WAIT_POLL_FIRST;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            tokio::time::sleep(pause.min(left)).await;
            if !self.still_held(key).await? {
                return Ok(());
            }
            pause = (pause * 2).min(WAIT_POLL_MAX);
        }
    }

    /// Whether the item under `key` is an in-progress record that was not released, read
    /// consistently, its state and lease alone. A release that keeps the record for its steps
    /// ends the lease: the waiter reserves again, and the same call takes the key over.
    async fn still_held(&self, key: &Key) -> Result<bool, StoreError> {
        let primary_key = self.primary_key(key)?;
        let names = self.names();
        let output = self
            .client()
            .get_item()
            .table_name(self.table())
            .set_key(Some(primary_key))
            .consistent_read(true)
            .projection_expression("#st, #lu")
            .expression_attribute_names("#st", &names.state)
            .expression_attribute_names("#lu", &names.live_until)
            .send()
            .await
            .map_err(|error| self.failed("GetItem", error))?;
        let Some(item) = output.item() else {
            return Ok(false);
        };
        let in_progress = matches!(
            item.get(&names.state),
            Some(AttributeValue::S(state)) if state == IN_PROGRESS
        );
        let released = codec::whole_number(item, &names.live_until) == Some(0);
        Ok(in_progress && !released)
    }
}
