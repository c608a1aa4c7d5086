//! What became of one message of a batch.

use std::fmt;

use crate::Error;

/// What [`BatchProcessor::process_messages`](super::BatchProcessor::process_messages) did
/// with one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MessageOutcome {
    /// The handler ran and succeeded; its key is recorded.
    Processed,
    /// The key was processed before, in this batch or an earlier one: the handler did not run.
    Replayed,
    /// The message has no key and the processor allows that: the handler ran and succeeded,
    /// without idempotency.
    ProcessedWithoutKey,
    /// The message failed and is reported in `batchItemFailures`, so that SQS redelivers it.
    Failed {
        /// The case, as [`Error::error_type`] names it, `HandlerError` for the handler's own
        /// error, or `HandlerPanic` when it panicked (its key is then held until the
        /// invocation's deadline, as after a crash).
        error_type: String,
        /// What went wrong.
        message: String,
    },
    /// An earlier message of a FIFO batch failed, so this one was not attempted; it is
    /// reported in `batchItemFailures` to keep the queue's order.
    NotAttempted,
}

impl MessageOutcome {
    /// Whether the message is done with: processed, replayed or processed without a key.
    pub fn is_success(&self) -> bool {
        matches!(
            self,
            MessageOutcome::Processed
                | MessageOutcome::Replayed
                | MessageOutcome::ProcessedWithoutKey
        )
    }

    /// Logs what happened to message `message_id`, once, when an operator needs to know: why
    /// it is reported for redelivery, or that it ran without a key (none under `key`, the
    /// processor's key expression).
    pub(crate) fn log(&self, message_id: &str, key: &str) {
        match self {
            MessageOutcome::Failed {
                error_type,
                message,
            } => tracing::warn!(
                target: crate::TARGET,
                message_id,
                error_type = error_type.as_str(),
                reason = message.as_str(),
                "an SQS message failed; it is reported for redelivery"
            ),
            MessageOutcome::NotAttempted => tracing::warn!(
                target: crate::TARGET,
                message_id,
                "an SQS message was not attempted after an earlier message of its FIFO batch \
                 failed; it is reported for redelivery"
            ),
            MessageOutcome::ProcessedWithoutKey => tracing::warn!(
                target: crate::TARGET,
                message_id,
                expression = key,
                "an SQS message has no idempotency key; it was processed without idempotency"
            ),
            MessageOutcome::Processed | MessageOutcome::Replayed => {}
        }
    }

    pub(crate) fn failed<E: fmt::Debug>(error: &Error<E>) -> Self {
        let (error_type, message) = match error {
            Error::Handler(handler) => ("HandlerError".to_owned(), format!("{handler:?}")),
            other => (
                other.error_type().unwrap_or_default().to_owned(),
                crate::error::describe_to_string(other),
            ),
        };
        MessageOutcome::Failed {
            error_type,
            message,
        }
    }
}
