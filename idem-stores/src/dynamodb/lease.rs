//! `renew` and `release`: the owner's writes to its lease, which must leave a record with steps,
//! and the sweeper's `ttl` of it, standing until the steps expire.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;
use idem_core::{
    store::{OwnerToken, Record, Timestamp, LEASE_GRACE},
    Key, StoreError,
};

use super::codec::{self, Item};
use super::failed::failed_item;
use super::DynamoDbStore;

/// How many updates `renew` makes at most: the first, then one more each time the steps'
/// TTL and the new lease's trade places under it.
const RENEW_ATTEMPTS: usize = 3;

/// A renewal that does not know the item: `ttl` follows the lease, or stays at the steps' TTL
/// when there are steps, provided that is not earlier than the lease's.
const RENEW_UPDATE: &str = "SET #lu = :lease_until, #ttl = if_not_exists(#sttl, :ttl)";
const RENEW_CONDITION: &str = "#st = :in_progress AND #own = :owner AND #lu <> :released \
     AND (attribute_not_exists(#sttl) OR #sttl >= :ttl)";

/// A renewal that read the item: `ttl` is the later of the lease's and the steps' TTL read,
/// provided no step raised the steps' TTL since.
const RENEW_READ_UPDATE: &str = "SET #lu = :lease_until, #ttl = :ttl";
const RENEW_READ_CONDITION: &str = "#st = :in_progress AND #own = :owner AND #lu <> :released \
     AND (attribute_not_exists(#sttl) OR #sttl <= :ttl)";

/// A release deletes the record only when it holds no step.
const RELEASE_CONDITION: &str = "#st = :in_progress AND #own = :owner \
     AND (attribute_not_exists(#steps) OR size(#steps) = :zero)";

/// A release of a record with steps ends its lease and keeps the rest, `ttl` included.
const RELEASE_STEPS_CONDITION: &str =
    "#st = :in_progress AND #own = :owner AND size(#steps) > :zero";

impl DynamoDbStore {
    /// Moves `owner`'s lease to `lease_until`, keeping `ttl` at or after the steps' TTL.
    pub(crate) async fn renew_lease(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Timestamp,
    ) -> Result<(), StoreError> {
        let lease_ttl = codec::ttl_seconds(lease_until + LEASE_GRACE);
        let mut read_ttl = None;
        for _ in 0..RENEW_ATTEMPTS {
            let (update, condition, ttl) = match read_ttl {
                None => (RENEW_UPDATE, RENEW_CONDITION, lease_ttl),
                Some(ttl) => (RENEW_READ_UPDATE, RENEW_READ_CONDITION, ttl),
            };
            let primary_key = self.primary_key(key)?;
            let names = self.names();
            let result = self
                .client()
                .update_item()
                .table_name(self.table())
                .set_key(Some(primary_key))
                .update_expression(update)
                .condition_expression(condition)
                .set_expression_attribute_names(Some(self.owner_names().into()))
                .expression_attribute_names("#lu", &names.live_until)
                .expression_attribute_names("#ttl", &names.ttl)
                .expression_attribute_names("#sttl", &names.steps_ttl)
                .set_expression_attribute_values(Some(Self::owner_values(owner).into()))
                .expression_attribute_values(":lease_until", codec::time(lease_until))
                .expression_attribute_values(":released", codec::time(Timestamp::EPOCH))
                .expression_attribute_values(":ttl", codec::number(ttl))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await;
            let old = match result {
                Ok(_) => return Ok(()),
                Err(error) => match failed_item(error) {
                    Ok(item) => item,
                    Err(error) => return Err(self.failed("UpdateItem", error)),
                },
            };
            let old = self.owned_item(key, owner, old).await?;
            if codec::whole_number(&old, &self.names().live_until) == Some(0) {
                // Released with steps: only a takeover gives the record a lease again.
                return Err(StoreError::LeaseLost);
            }
            let steps_ttl = match old.get(&self.names().steps_ttl) {
                None => 0,
                Some(_) => codec::whole_number(&old, &self.names().steps_ttl).ok_or_else(|| {
                    StoreError::Corrupt(format!(
                        "attribute `{}` is not a whole number",
                        self.names().steps_ttl
                    ))
                })?,
            };
            read_ttl = Some(lease_ttl.max(steps_ttl));
        }
        Err(StoreError::backend(format!(
            "DynamoDB UpdateItem on table `{}`: the condition of a renewal failed \
             {RENEW_ATTEMPTS} times on an item that changed under it",
            self.table()
        )))
    }

    /// Deletes `owner`'s record, or ends its lease when it holds steps: one `DeleteItem`
    /// without steps, and an `UpdateItem` after it with steps (a delete can't turn into an
    /// update, and the store can't tell which it needs before the first answer).
    pub(crate) async fn release_lease(
        &self,
        key: &Key,
        owner: &OwnerToken,
    ) -> Result<(), StoreError> {
        let primary_key = self.primary_key(key)?;
        let result = self
            .client()
            .delete_item()
            .table_name(self.table())
            .set_key(Some(primary_key))
            .condition_expression(RELEASE_CONDITION)
            .set_expression_attribute_names(Some(self.owner_names().into()))
            .expression_attribute_names("#steps", &self.names().steps)
            .set_expression_attribute_values(Some(Self::owner_values(owner).into()))
            .expression_attribute_values(":zero", codec::number(0))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let old = match result {
            Ok(_) => return Ok(()),
            Err(error) => match failed_item(error) {
                Ok(item) => item,
                Err(error) => return Err(self.failed("DeleteItem", error)),
            },
        };
        let old = self.owned_item(key, owner, old).await?;
        match self.decode(old)? {
            Record::InProgress(held) if !held.steps().is_empty() => {}
            _ => return Err(StoreError::LeaseLost),
        }
        let primary_key = self.primary_key(key)?;
        let result = self
            .client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(primary_key))
            .update_expression("SET #lu = :released")
            .condition_expression(RELEASE_STEPS_CONDITION)
            .set_expression_attribute_names(Some(self.owner_names().into()))
            .expression_attribute_names("#lu", &self.names().live_until)
            .expression_attribute_names("#steps", &self.names().steps)
            .set_expression_attribute_values(Some(Self::owner_values(owner).into()))
            .expression_attribute_values(":released", codec::time(Timestamp::EPOCH))
            .expression_attribute_values(":zero", codec::number(0))
            .send()
            .await;
        self.owner_checked(
            "UpdateItem",
            result,
            UpdateItemError::is_conditional_check_failed_exception,
        )
    }

    /// The item that failed an owner-conditioned write, read if the endpoint did not return
    /// it, when `owner` still holds it; else the lease is lost.
    pub(crate) async fn owned_item(
        &self,
        key: &Key,
        owner: &OwnerToken,
        failed: Option<Item>,
    ) -> Result<Item, StoreError> {
        let item = match failed {
            Some(item) => Some(item),
            None => self.item(key).await?,
        };
        match item {
            Some(item)
                // A copy, on the path of a write that failed: the caller reads the item on.
                if codec::owner(self.names(), &item) == Some(owner.as_str())
                    && matches!(self.decode(item.clone())?, Record::InProgress(_)) =>
            {
                Ok(item)
            }
            _ => Err(StoreError::LeaseLost),
        }
    }
}
