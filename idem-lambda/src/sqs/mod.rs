//! SQS batches: each message processed once per key, the failed ones reported as
//! `batchItemFailures`.

mod outcome;
mod run;

use std::future::Future;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use idem_core::Idempotency;
use lambda_runtime::LambdaEvent;

use crate::invocation::CallOptions;
use crate::selection::Selector;
use crate::EventPath;

pub use outcome::MessageOutcome;

/// A function that names the principal a message belongs to.
type MessagePrincipal = dyn Fn(&SqsMessage) -> Option<String> + Send + Sync;

/// Processes the messages of an SQS batch, each once per idempotency key.
///
/// ```no_run
/// use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
/// use idem_core::Idempotency;
/// use lambda_runtime::{service_fn, LambdaEvent};
///
/// # async fn demo(idem: Idempotency) -> Result<(), lambda_runtime::Error> {
/// let processor = idem_lambda::sqs::BatchProcessor::new(idem)
///     .name("fulfil")
///     .event_key("powertools_json(body).order_id");
/// let processor = &processor;
/// lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
///     let response: SqsBatchResponse = processor
///         .process(event, |message| async move {
///             println!("fulfilling {}", message.body.unwrap_or_default());
///             Ok::<(), lambda_runtime::Error>(())
///         })
///         .await;
///     Ok::<_, lambda_runtime::Error>(response)
/// }))
/// .await
/// # }
/// ```
///
/// - The key of a message is what [`event_key`](Self::event_key) selects from it (the message
///   as Lambda delivers it: `messageId`, `body`, `attributes`...); by default its `messageId`,
///   so that a redelivered message is not processed twice.
/// - A message whose key was processed before, in this batch or an earlier one, is not
///   processed again and counts as a success.
/// - A message that fails (the handler's `Err`, an in-progress duplicate, the same key with
///   another payload, a store error, no key) is reported in `batchItemFailures`; the function's
///   event source mapping must have `ReportBatchItemFailures` on. A failed handler releases its
///   key, so the redelivery runs it again. A handler that panics fails its own message
///   (`HandlerPanic`); its key is held until the invocation's deadline, and the batch goes on.
/// - Messages run one after another unless [`concurrency`](Self::concurrency) allows more;
///   messages that share a key always run one after another, so that the later ones replay.
/// - From a FIFO queue (an `eventSourceARN` ending in `.fifo`), processing stops at the first
///   failure, which is reported with every message after it, so that the queue's order holds.
/// - Every message reported in `batchItemFailures` is logged once (a warning under the target
///   `idem::lambda`) with its `message_id`, its `error_type` and the reason, so that a message
///   that ends in the dead-letter queue says why; so is a message processed without a key.
///
/// # Whose key it is
///
/// A message's key is **not scoped by a principal** unless [`principal`](Self::principal)
/// names one: SQS carries no caller's identity, and the producer that writes to the queue is
/// trusted to choose keys, as any code that may send to the queue can. Two producers that
/// write one key to one queue share its record: the second message is taken as a redelivery
/// of the first. Where the queue carries several tenants' messages, name the tenant with
/// [`principal`](Self::principal), so that their keys and their
/// [`ScopeQuota`](idem_core::ScopeQuota) allowances are kept apart.
pub struct BatchProcessor {
    idem: Idempotency,
    name: Option<String>,
    selector: Selector,
    principal: Option<Box<MessagePrincipal>>,
    raise_on_no_key: bool,
    concurrency: usize,
    options: CallOptions,
}

impl BatchProcessor {
    /// A processor on `idem`, keyed by each message's `messageId`.
    pub fn new(idem: Idempotency) -> Self {
        BatchProcessor {
            idem,
            name: None,
            selector: Selector {
                key: EventPath::parse("messageId").expect("a valid expression"),
                validation: None,
                partial_keys: false,
            },
            principal: None,
            raise_on_no_key: true,
            concurrency: 1,
            options: CallOptions::default(),
        }
    }

    /// The name keys are made under; by default the Lambda function's own, from the
    /// invocation's context.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The JMESPath expression that selects a message's key, as Powertools writes it.
    ///
    /// # Panics
    ///
    /// When `expression` is not valid JMESPath: at cold start, with what is wrong with it.
    /// Parse it with [`EventPath::parse`] and pass it to [`event_key_path`](Self::event_key_path)
    /// to handle the error instead.
    pub fn event_key(self, expression: &str) -> Self {
        self.event_key_path(parse_or_panic(expression))
    }

    /// [`event_key`](Self::event_key) with an expression parsed beforehand.
    pub fn event_key_path(mut self, path: EventPath) -> Self {
        self.selector.key = path;
        self
    }

    /// A JMESPath expression for data a redelivery must repeat besides the key: a message with
    /// the same key and other data here is refused (and reported as failed). Numbers compare
    /// by value: see [Numbers](crate#numbers).
    ///
    /// # Panics
    ///
    /// When `expression` is not valid JMESPath, as [`event_key`](Self::event_key).
    pub fn payload_validation(mut self, expression: &str) -> Self {
        self.selector.validation = Some(parse_or_panic(expression));
        self
    }

    /// Names the principal (tenant) a message belongs to, from what its producer wrote: its
    /// key is stored under that principal's scope, so that two tenants' messages with one key
    /// are two calls, and a quota counts each tenant apart. A message for which it returns
    /// `None` (or a blank name) is keyed unscoped, as every message is without it.
    ///
    /// ```
    /// # fn demo(idem: idem_core::Idempotency) {
    /// use aws_lambda_events::event::sqs::SqsMessage;
    ///
    /// let processor = idem_lambda::sqs::BatchProcessor::new(idem)
    ///     .event_key("powertools_json(body).order_id")
    ///     .principal(|message: &SqsMessage| {
    ///         let tenant = message.message_attributes.get("tenant")?;
    ///         tenant.string_value.clone()
    ///     });
    /// # let _ = processor; }
    /// ```
    pub fn principal<F>(mut self, principal: F) -> Self
    where
        F: Fn(&SqsMessage) -> Option<String> + Send + Sync + 'static,
    {
        self.principal = Some(Box::new(principal));
        self
    }

    /// The scope of `message`'s key: the principal the function names, if any.
    fn principal_of(&self, message: &SqsMessage) -> Option<String> {
        let principal = self.principal.as_ref()?(message);
        idem_protocol::scope::effective(principal.as_deref()).map(str::to_owned)
    }

    /// Whether a message without a key fails (`true`, the default) or is processed without
    /// idempotency (`false`).
    pub fn raise_on_no_idempotency_key(mut self, raise: bool) -> Self {
        self.raise_on_no_key = raise;
        self
    }

    /// Takes a key of several parts with some of them missing, as Powertools does; by default
    /// such a message has no key (see
    /// [`IdempotentHandlerBuilder::allow_partial_keys`](crate::IdempotentHandlerBuilder::allow_partial_keys)).
    pub fn allow_partial_keys(mut self) -> Self {
        self.selector.partial_keys = true;
        self
    }

    /// How many messages with different keys may be processed at once; 1 (one after another)
    /// unless set. Raised to at least 1; FIFO batches are always processed one at a time.
    pub fn concurrency(mut self, limit: usize) -> Self {
        self.concurrency = limit.max(1);
        self
    }

    /// How long a message's key is remembered once it was processed; 24 hours unless set.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.options.ttl = ttl;
        self
    }

    /// Processes every message of `event` with `handler`, and answers which failed.
    pub async fn process<F, Fut, E>(
        &self,
        event: LambdaEvent<SqsEvent>,
        handler: F,
    ) -> SqsBatchResponse
    where
        F: Fn(SqsMessage) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: std::fmt::Debug,
    {
        let outcomes = self.process_messages(event, handler).await;
        let mut response = SqsBatchResponse::default();
        for (message_id, outcome) in outcomes {
            if !outcome.is_success() {
                response.add_failure(message_id);
            }
        }
        response
    }
}

fn parse_or_panic(expression: &str) -> EventPath {
    EventPath::parse(expression)
        .unwrap_or_else(|error| panic!("idem_lambda::sqs::BatchProcessor: {error}"))
}
