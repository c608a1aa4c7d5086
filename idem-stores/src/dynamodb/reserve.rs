//! Reserving: one conditional put on a free key, and the takeover of an in-progress record
//! whose lease passed, in one conditional request on the exact record that was read.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use idem_core::store::{judge_found, judge_reserve, ReserveJudgement, Store};
use idem_core::{
    store::{Claim, InProgress, Record, Reservation, LEASE_GRACE},
    Key, StoreError,
};

use super::codec::{self, Item, COMPLETED, IN_PROGRESS};
use super::failed::failed_item;
use super::DynamoDbStore;

/// How many times `reserve` writes again after its first conditional write failed: once each
/// time the item that failed the condition turns out free or taken over (a takeover is a
/// write conditioned on the exact record read).
const RESERVE_ATTEMPTS: usize = 3;

/// The condition of a reservation of a free key: no item, or an expired completed record.
/// `attribute_type` keeps an ill-typed expiry out of the comparison, so a malformed item fails
/// the condition and is reported.
const FREE_CONDITION: &str = "attribute_not_exists(#k) \
     OR (#st = :completed AND attribute_type(#lu, :number) AND #lu <= :now)";

/// The condition of a takeover by the same call: the item is still exactly the in-progress
/// record that was read (same owner, lease not renewed since), and no step recorded since the
/// read needs a later `ttl` than the one written.
const SAME_CALL_CONDITION: &str = "#st = :in_progress AND #own = :previous \
     AND #lu = :previous_lease AND (attribute_not_exists(#sttl) OR #sttl <= :ttl)";

/// The condition of a takeover by another call: the item is still exactly the in-progress
/// record that was read, and its steps, if any, no longer hold the key (a step recorded since
/// the read makes the record live again).
const OTHER_CALL_CONDITION: &str = "#st = :in_progress AND #own = :previous \
     AND #lu = :previous_lease AND (attribute_not_exists(#kept) OR #kept <= :now)";

/// The operands of what both takeover conditions start with, that the item is still exactly
/// the in-progress record that was read: `#st = :in_progress AND #own = :previous AND #lu =
/// :previous_lease`. A request adds its own after them.
struct StillAsRead {
    names: HashMap<String, String>,
    values: Item,
}

impl StillAsRead {
    fn of(store: &DynamoDbStore, previous: &InProgress) -> Self {
        let names = store.names();
        let names = [
            ("#st", &names.state),
            ("#own", &names.owner),
            ("#lu", &names.live_until),
        ];
        let values = [
            (":in_progress", AttributeValue::S(IN_PROGRESS.into())),
            (
                ":previous",
                AttributeValue::S(previous.owner().as_str().to_owned()),
            ),
            (":previous_lease", codec::time(previous.lease_until())),
        ];
        StillAsRead {
            names: names
                .into_iter()
                .map(|(placeholder, name)| (placeholder.to_owned(), name.clone()))
                .collect(),
            values: values
                .into_iter()
                .map(|(placeholder, value)| (placeholder.to_owned(), value))
                .collect(),
        }
    }
}

/// The outcome of one takeover request: the reservation, or the item that failed the
/// condition (if the endpoint returned it).
type Attempt = Result<Reservation, Option<Item>>;

impl DynamoDbStore {
    /// Reserves `key` for `claim`: a conditional put on a free key, and on a failed
    /// condition the item that failed it, judged and taken over or answered.
    pub(crate) async fn reserve_key(
        &self,
        key: &Key,
        claim: &Claim,
    ) -> Result<Reservation, StoreError> {
        let item_key = self.checked_item_key(key)?;
        let mut put = self.put_free(&item_key, claim).await?;
        for _ in 0..RESERVE_ATTEMPTS {
            let old = match put {
                Ok(reservation) => return Ok(reservation),
                Err(old) => old,
            };
            // The item that failed the condition: one request for a replay or a conflict.
            let record = match old {
                Some(old) => Some(self.decode(old)?),
                // An endpoint that does not return it: read it, which costs a request more.
                None => self.get(key).await?,
            };
            // DynamoDB caps an item at 400 KB, so the item is in hand already, and small; the
            // size rule still answers as every store does.
            if let Some(found) = &record {
                if let Some(unread) = judge_found(found, claim)? {
                    return Ok(Reservation::Existing(unread));
                }
            }
            // What to do about it is idem-core's judgement; the conditional writes are ours.
            let judgement = judge_reserve(record, claim);
            put = match judgement {
                ReserveJudgement::Vacant | ReserveJudgement::Expired(_) => {
                    self.put_free(&item_key, claim).await?
                }
                ReserveJudgement::TakeOver(previous) => {
                    self.take_over(&item_key, claim, &previous).await?
                }
                ReserveJudgement::Held(_) | ReserveJudgement::Existing(_) => {
                    return Ok(judgement.into_reservation(claim))
                }
            };
        }
        // The last write may have landed: its reservation is this caller's.
        if let Ok(reservation) = put {
            return Ok(reservation);
        }
        Err(StoreError::backend(format!(
            "DynamoDB reserve on table `{}`: the condition failed {RESERVE_ATTEMPTS} times on an \
             item that changed under it",
            self.table
        )))
    }

    /// One conditional put of the claim's record on a free key. `Ok(Err(item))` is a failed
    /// condition with the item that failed it, if the endpoint returned it.
    async fn put_free(
        &self,
        item_key: &str,
        claim: &Claim,
    ) -> Result<Result<Reservation, Option<Item>>, StoreError> {
        let names = &self.names;
        let result = self
            .client
            .put_item()
            .table_name(&*self.table)
            .set_item(Some(codec::in_progress(
                names,
                self.table_key.primary_key(item_key),
                claim.record(),
            )))
            .condition_expression(FREE_CONDITION)
            .expression_attribute_names("#k", &names.key)
            .expression_attribute_names("#st", &names.state)
            .expression_attribute_names("#lu", &names.live_until)
            .expression_attribute_values(":completed", AttributeValue::S(COMPLETED.into()))
            .expression_attribute_values(":now", codec::time(claim.now()))
            .expression_attribute_values(":number", AttributeValue::S("N".into()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        self.reserved_or_failed(result, || Reservation::Reserved(claim.record().clone()))
    }

    /// Takes `previous` over for `claim`, if the item still holds exactly `previous`.
    pub(crate) async fn take_over(
        &self,
        item_key: &str,
        claim: &Claim,
        previous: &InProgress,
    ) -> Result<Attempt, StoreError> {
        if claim.record().is_same_call(previous) {
            self.take_over_same_call(item_key, claim, previous).await
        } else {
            self.take_over_other_call(item_key, claim, previous).await
        }
    }

    /// An `UpdateItem` of the record's owner, lease, fencing token and attempt that leaves its
    /// steps alone, so a step the previous owner recorded since the read is kept, and returns
    /// the whole new item: the steps come with the answer.
    async fn take_over_same_call(
        &self,
        item_key: &str,
        claim: &Claim,
        previous: &InProgress,
    ) -> Result<Attempt, StoreError> {
        let names = self.names();
        let still_as_read = StillAsRead::of(self, previous);
        let record = claim.record().taking_over(previous);
        let lease_ttl = codec::ttl_seconds(record.lease_until() + LEASE_GRACE);
        let steps = previous.steps();
        let ttl = if steps.is_empty() {
            lease_ttl
        } else {
            lease_ttl.max(codec::ttl_seconds(steps.kept_until()))
        };
        let result = self
            .client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(self.table_key().primary_key(item_key)))
            .update_expression(
                "SET #own = :owner, #lu = :lease_until, #ft = :fencing_token, \
                 #att = :attempt, #ttl = :ttl, #steps = if_not_exists(#steps, :no_steps)",
            )
            .condition_expression(SAME_CALL_CONDITION)
            .set_expression_attribute_names(Some(still_as_read.names))
            .set_expression_attribute_values(Some(still_as_read.values))
            .expression_attribute_names("#ft", &names.fencing_token)
            .expression_attribute_names("#att", &names.attempt)
            .expression_attribute_names("#ttl", &names.ttl)
            .expression_attribute_names("#steps", &names.steps)
            .expression_attribute_names("#sttl", &names.steps_ttl)
            .expression_attribute_values(
                ":owner",
                AttributeValue::S(record.owner().as_str().to_owned()),
            )
            .expression_attribute_values(":lease_until", codec::time(record.lease_until()))
            .expression_attribute_values(":fencing_token", codec::number(record.fencing_token()))
            .expression_attribute_values(":attempt", codec::number(record.attempt().into()))
            .expression_attribute_values(":ttl", codec::number(ttl))
            .expression_attribute_values(":no_steps", AttributeValue::M(Default::default()))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let written = match result {
            Ok(output) => output.attributes,
            Err(error) => {
                return match failed_item(error) {
                    Ok(item) => Ok(Err(item)),
                    Err(error) => Err(self.failed("UpdateItem", error)),
                }
            }
        };
        // An endpoint that does not return the new item: the steps are those read.
        let record = match written {
            Some(written) => match self.decode(written)? {
                Record::InProgress(record) => record,
                other => {
                    return Err(StoreError::Corrupt(format!(
                        "a takeover wrote an in-progress record and read back {other:?}"
                    )))
                }
            },
            None => record,
        };
        Ok(Ok(Reservation::TookOver {
            previous: previous.owner().clone(),
            record,
        }))
    }

    /// A `PutItem` of the claim's record, with no steps: the previous call's steps, expired,
    /// are dropped with its item.
    async fn take_over_other_call(
        &self,
        item_key: &str,
        claim: &Claim,
        previous: &InProgress,
    ) -> Result<Attempt, StoreError> {
        let names = self.names();
        let still_as_read = StillAsRead::of(self, previous);
        let record = claim.record().taking_over(previous);
        let result = self
            .client()
            .put_item()
            .table_name(self.table())
            .set_item(Some(codec::in_progress(
                names,
                self.table_key().primary_key(item_key),
                &record,
            )))
            .condition_expression(OTHER_CALL_CONDITION)
            .set_expression_attribute_names(Some(still_as_read.names))
            .set_expression_attribute_values(Some(still_as_read.values))
            .expression_attribute_names("#kept", &names.steps_kept_until)
            .expression_attribute_values(":now", codec::time(claim.now()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        self.reserved_or_failed(result, || Reservation::TookOver {
            previous: previous.owner().clone(),
            record,
        })
    }
}
