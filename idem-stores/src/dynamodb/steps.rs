//! `record_step`: one `UpdateItem` of an element of the steps map, fenced by the owner.

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use idem_core::{
    store::{InProgress, OwnerToken, Steps, Timestamp},
    Fingerprint, Key, StoreError,
};

use super::codec::{self, Item, MAX_ITEM_SIZE};
use super::error::StepTooLarge;
use super::failed::failed_item;
use super::{AttributeNames, DynamoDbStore};

/// How many updates `record_step` makes at most: the first, then one more each time the item
/// turns out to hold a later kept-until instant or `ttl` than the step's (a clock behind the
/// previous owner's, or a lease that outlasts the steps), which the update must not lower.
const STEP_ATTEMPTS: usize = 3;

/// The step's update: its element of the map, and the kept-until instant, the steps' TTL and
/// the sweeper's `ttl`, each raised to the step's.
const STEP_UPDATE: &str = "SET #steps.#name = :value, #kept = :kept, #sttl = :sttl, #ttl = :ttl";

/// The owner condition of `complete`, a steps map to write into, and nothing written that would
/// go down: DynamoDB has no `max`, so the update applies only where its values are the larger
/// ones.
const STEP_CONDITION: &str = "#st = :in_progress AND #own = :owner \
     AND attribute_type(#steps, :map) \
     AND (attribute_not_exists(#kept) OR #kept <= :kept) \
     AND (attribute_not_exists(#ttl) OR #ttl <= :ttl)";

/// The values a step's update writes besides the step itself.
#[derive(Clone, Copy, Debug)]
struct Floor {
    /// The steps' kept-until instant.
    kept_until: Timestamp,
    /// The sweeper's `ttl`, in seconds: at least the steps' TTL.
    ttl: u64,
}

impl Floor {
    fn new(kept_until: Timestamp) -> Self {
        Floor {
            kept_until,
            ttl: codec::ttl_seconds(kept_until),
        }
    }

    /// These values raised to those `item` already holds.
    fn raised_to(self, names: &AttributeNames, item: &Item) -> Self {
        let kept_until = codec::whole_number(item, &names.steps_kept_until)
            .map_or(self.kept_until, |held| {
                self.kept_until.max(Timestamp::from_millis(held))
            });
        let ttl = codec::ttl_seconds(kept_until)
            .max(self.ttl)
            .max(codec::whole_number(item, &names.ttl).unwrap_or(0));
        Floor { kept_until, ttl }
    }
}

impl DynamoDbStore {
    /// Records step `name` in `owner`'s record under `key`.
    pub(crate) async fn put_step(
        &self,
        key: &Key,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) -> Result<(), StoreError> {
        if name.is_empty() {
            return Err(StoreError::rejected(
                "a step needs a name: DynamoDB refuses an empty attribute name",
            ));
        }
        let item_key = self.checked_item_key(key)?;
        self.check_step_size(&item_key, owner, name, value, kept_until)?;
        let mut floor = Floor::new(kept_until);
        for _ in 0..STEP_ATTEMPTS {
            let old = match self
                .update_step(&item_key, owner, name, value, floor)
                .await?
            {
                Ok(()) => return Ok(()),
                Err(old) => self.owned_item(key, owner, old).await?,
            };
            let names = self.names();
            if !matches!(old.get(&names.steps), Some(AttributeValue::M(_))) {
                return Err(StoreError::Corrupt(format!(
                    "attribute `{}` is missing or not a map",
                    names.steps
                )));
            }
            for name in [&names.ttl, &names.steps_kept_until] {
                if old.contains_key(name) && codec::whole_number(&old, name).is_none() {
                    return Err(StoreError::Corrupt(format!(
                        "attribute `{name}` is not a whole number"
                    )));
                }
            }
            floor = floor.raised_to(names, &old);
        }
        Err(StoreError::backend(format!(
            "DynamoDB UpdateItem on table `{}`: the condition of step `{name}` failed \
             {STEP_ATTEMPTS} times on an item that changed under it",
            self.table()
        )))
    }

    /// Refuses a step whose record would be over the item limit with this step alone.
    fn check_step_size(
        &self,
        item_key: &str,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) -> Result<(), StoreError> {
        let steps = Steps::new()
            .with_step(name, value.to_vec())
            .with_kept_until(kept_until);
        let record = InProgress::new(owner.clone(), Fingerprint::empty(), kept_until)
            .with_fencing_token(u64::MAX)
            .with_attempt(u32::MAX)
            .with_steps(steps);
        let size = codec::item_size(&codec::in_progress(
            self.names(),
            self.table_key().primary_key(item_key),
            &record,
        ));
        if size > MAX_ITEM_SIZE {
            return Err(StoreError::rejected(StepTooLarge {
                step: name.to_owned(),
                size: Some(size),
                limit: MAX_ITEM_SIZE,
            }));
        }
        Ok(())
    }

    /// One update of the step. `Ok(Err(item))` is a failed condition with the item that
    /// failed it, if the endpoint returned it.
    async fn update_step(
        &self,
        item_key: &str,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        floor: Floor,
    ) -> Result<Result<(), Option<Item>>, StoreError> {
        let names = self.names();
        let result = self
            .client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(self.table_key().primary_key(item_key)))
            .update_expression(STEP_UPDATE)
            .condition_expression(STEP_CONDITION)
            .set_expression_attribute_names(Some(self.owner_names().into()))
            .expression_attribute_names("#steps", &names.steps)
            .expression_attribute_names("#name", name)
            .expression_attribute_names("#kept", &names.steps_kept_until)
            .expression_attribute_names("#sttl", &names.steps_ttl)
            .expression_attribute_names("#ttl", &names.ttl)
            .set_expression_attribute_values(Some(Self::owner_values(owner).into()))
            .expression_attribute_values(":value", codec::step_value(value))
            .expression_attribute_values(":kept", codec::time(floor.kept_until))
            .expression_attribute_values(
                ":sttl",
                codec::number(codec::ttl_seconds(floor.kept_until)),
            )
            .expression_attribute_values(":ttl", codec::number(floor.ttl))
            .expression_attribute_values(":map", AttributeValue::S("M".into()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let error = match result.map_err(failed_item) {
            Ok(_) => return Ok(Ok(())),
            Err(Ok(failed)) => return Ok(Err(failed)),
            Err(Err(error)) => error,
        };
        match error.as_service_error() {
            Some(service) if is_item_too_large(service) => {
                Err(StoreError::rejected(StepTooLarge {
                    step: name.to_owned(),
                    size: None,
                    limit: MAX_ITEM_SIZE,
                }))
            }
            _ => Err(self.failed("UpdateItem", error)),
        }
    }
}

/// Whether DynamoDB refused an update because the item would outgrow its size limit.
fn is_item_too_large(error: &UpdateItemError) -> bool {
    error.code() == Some("ValidationException")
        && error
            .message()
            .is_some_and(|message| message.contains("Item size"))
}
