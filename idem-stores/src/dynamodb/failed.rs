//! The item a conditional write returns when it fails its condition
//! (`ReturnValuesOnConditionCheckFailure::AllOld`), moved out of the error rather than copied:
//! a reservation answers with the record it found, and a replayed outcome is the buffer the
//! SDK read it into.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;

use super::codec::Item;

/// An operation's error, which may be a failed condition.
pub(crate) trait ConditionFailure: Sized {
    /// Whether the error is a failed condition.
    fn is_condition_failure(&self) -> bool;

    /// The item a failed condition came with; `None` for any other error.
    fn into_failed_item(self) -> Option<Item>;
}

macro_rules! condition_failure {
    ($($error:ident),+) => {$(
        impl ConditionFailure for $error {
            fn is_condition_failure(&self) -> bool {
                self.is_conditional_check_failed_exception()
            }

            fn into_failed_item(self) -> Option<Item> {
                match self {
                    $error::ConditionalCheckFailedException(failed) => failed.item,
                    _ => None,
                }
            }
        }
    )+};
}

condition_failure!(PutItemError, UpdateItemError, DeleteItemError);

/// `Ok` with the item that failed the condition (`None` when the endpoint returned none) when
/// `error` is a failed condition; `error` as it was otherwise.
pub(crate) fn failed_item<E: ConditionFailure, R>(
    error: SdkError<E, R>,
) -> Result<Option<Item>, SdkError<E, R>> {
    match error {
        SdkError::ServiceError(failed) if failed.err().is_condition_failure() => {
            Ok(failed.into_err().into_failed_item())
        }
        other => Err(other),
    }
}
