//! The order a batch is processed in: sequentially, by groups of one key, or up to the first
//! failure of a FIFO batch.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use futures_util::stream::{self, StreamExt};
use futures_util::FutureExt;
use lambda_runtime::{Context, LambdaEvent};

use super::{BatchProcessor, MessageOutcome};
use crate::invocation;
use crate::scoping::Scope;
use crate::selection::{Selected, Unselected};
use crate::Error;

/// One message with the key it was given.
struct Prepared {
    position: usize,
    message: SqsMessage,
    key: MessageKey,
}

/// What a message's key is.
enum MessageKey {
    /// Processed under this key.
    Keyed(Selected),
    /// No key, and the processor runs such messages without idempotency.
    Unkeyed,
    /// No key the processor accepts: the message fails with this.
    Refused(Error<()>),
}

impl BatchProcessor {
    /// Processes every message of `event` with `handler`, and says what became of each, by
    /// message id, in the batch's order.
    pub async fn process_messages<F, Fut, E>(
        &self,
        event: LambdaEvent<SqsEvent>,
        handler: F,
    ) -> Vec<(String, MessageOutcome)>
    where
        F: Fn(SqsMessage) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: fmt::Debug,
    {
        let (batch, context) = event.into_parts();
        let fifo = batch.records.iter().any(is_fifo);
        let ids: Vec<String> = batch
            .records
            .iter()
            .map(|message| message.message_id.clone().unwrap_or_default())
            .collect();
        let prepared: Vec<Prepared> = batch
            .records
            .into_iter()
            .enumerate()
            .map(|(position, message)| self.prepare(position, message, &context))
            .collect();
        let outcomes = if fifo {
            self.until_first_failure(prepared, &context, &handler).await
        } else {
            self.by_key(prepared, &context, &handler).await
        };
        let reported: Vec<(String, MessageOutcome)> = ids.into_iter().zip(outcomes).collect();
        for (message_id, outcome) in &reported {
            outcome.log(message_id, self.selector.key.as_str());
        }
        reported
    }

    fn prepare(&self, position: usize, message: SqsMessage, context: &Context) -> Prepared {
        let key = match invocation::name(self.name.as_deref(), context) {
            None => MessageKey::Refused(Error::Unnamed),
            Some(name) => match self.selector.select(&self.idem, name, &message, |_| {
                Scope::Of(self.principal_of(&message))
            }) {
                Ok(selected) => MessageKey::Keyed(selected),
                Err(Unselected::Missing) if !self.raise_on_no_key => MessageKey::Unkeyed,
                Err(unselected) => MessageKey::Refused(unselected.into_error(&self.selector)),
            },
        };
        Prepared {
            position,
            message,
            key,
        }
    }

    /// A FIFO batch: one message after another, and none after the first failure.
    async fn until_first_failure<F, Fut, E>(
        &self,
        prepared: Vec<Prepared>,
        context: &Context,
        handler: &F,
    ) -> Vec<MessageOutcome>
    where
        F: Fn(SqsMessage) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: fmt::Debug,
    {
        let mut outcomes = Vec::with_capacity(prepared.len());
        for message in prepared {
            let failed_before = outcomes
                .last()
                .is_some_and(|o: &MessageOutcome| !o.is_success());
            outcomes.push(if failed_before {
                MessageOutcome::NotAttempted
            } else {
                self.one(message, context, handler).await
            });
        }
        outcomes
    }

    /// A standard batch: messages that share a key one after another (the later ones replay),
    /// different keys up to the concurrency limit at once.
    async fn by_key<F, Fut, E>(
        &self,
        prepared: Vec<Prepared>,
        context: &Context,
        handler: &F,
    ) -> Vec<MessageOutcome>
    where
        F: Fn(SqsMessage) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: fmt::Debug,
    {
        let count = prepared.len();
        let mut groups: Vec<Vec<Prepared>> = Vec::new();
        let mut group_of_key: HashMap<String, usize> = HashMap::new();
        for message in prepared {
            let key = match &message.key {
                MessageKey::Keyed(selected) => Some(selected.key.as_str()),
                MessageKey::Unkeyed | MessageKey::Refused(_) => None,
            };
            let earlier = key.and_then(|key| match group_of_key.get(key) {
                Some(&group) => Some(group),
                None => {
                    group_of_key.insert(key.to_owned(), groups.len());
                    None
                }
            });
            match earlier {
                Some(group) => groups[group].push(message),
                None => groups.push(vec![message]),
            }
        }
        let mut outcomes: Vec<Option<MessageOutcome>> = vec![None; count];
        let mut finished = stream::iter(groups)
            .map(|group| async move {
                let mut done = Vec::with_capacity(group.len());
                for message in group {
                    let position = message.position;
                    done.push((position, self.one(message, context, handler).await));
                }
                done
            })
            .buffer_unordered(self.concurrency);
        while let Some(done) = finished.next().await {
            for (position, outcome) in done {
                outcomes[position] = Some(outcome);
            }
        }
        outcomes
            .into_iter()
            .map(|outcome| outcome.expect("every message was processed"))
            .collect()
    }

    /// Processes one message.
    async fn one<F, Fut, E>(
        &self,
        prepared: Prepared,
        context: &Context,
        handler: &F,
    ) -> MessageOutcome
    where
        F: Fn(SqsMessage) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: fmt::Debug,
    {
        let message = prepared.message;
        let selected = match prepared.key {
            MessageKey::Keyed(selected) => selected,
            MessageKey::Unkeyed => {
                return match AssertUnwindSafe(handler(message)).catch_unwind().await {
                    Ok(Ok(())) => MessageOutcome::ProcessedWithoutKey,
                    Ok(Err(error)) => MessageOutcome::failed(&Error::Handler(error)),
                    Err(panic) => panicked(panic),
                };
            }
            MessageKey::Refused(error) => return MessageOutcome::failed(&error),
        };
        let call = self.options.call(&self.idem, selected, context);
        let body = async move { handler(message).await.map_err(Error::Handler) };
        // A panic fails its own message, not the batch: the engine has already settled its
        // key (held until the lease passes, as for a crash), and the other messages go on.
        match AssertUnwindSafe(self.idem.run(call, body))
            .catch_unwind()
            .await
        {
            Ok(Ok(done)) if done.replayed => MessageOutcome::Replayed,
            Ok(Ok(_)) => MessageOutcome::Processed,
            Ok(Err(error)) => MessageOutcome::failed(&error),
            Err(panic) => panicked(panic),
        }
    }
}

/// The outcome of a message whose handler panicked.
fn panicked(panic: Box<dyn Any + Send>) -> MessageOutcome {
    let message = panic
        .downcast_ref::<&str>()
        .map(|text| text.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    MessageOutcome::Failed {
        error_type: "HandlerPanic".to_owned(),
        message,
    }
}

fn is_fifo(message: &SqsMessage) -> bool {
    message
        .event_source_arn
        .as_deref()
        .is_some_and(|arn| arn.ends_with(".fifo"))
}
