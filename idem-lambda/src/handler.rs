//! An idempotent Lambda handler: a tower service around any handler service.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use idem_core::Idempotency;
use lambda_runtime::LambdaEvent;
use serde::{de::DeserializeOwned, Serialize};
use tower_service::Service;

use crate::hook::{Replay, ResponseHook};
use crate::invocation::{self, CallOptions};
use crate::scoping::Scoping;
use crate::selection::{Selector, Unselected};
use crate::{Error, EventPath, ExpressionError, Unscoped};

/// A Lambda handler that runs once per idempotency key: a retry of an event (another delivery,
/// another request id, the same key) gets the first invocation's response without running the
/// handler again.
///
/// It is a cloneable tower [`Service`] over [`LambdaEvent`]s, built with
/// [`IdempotentHandler::builder`], and it goes to [`lambda_runtime::run`] as the handler it
/// wraps would:
///
/// ```no_run
/// use idem_core::Idempotency;
/// use lambda_runtime::{service_fn, LambdaEvent};
/// use serde_json::{json, Value};
///
/// async fn create_order(event: LambdaEvent<Value>) -> Result<Value, lambda_runtime::Error> {
///     Ok(json!({"statusCode": 201, "body": "created"}))
/// }
///
/// # async fn demo(idem: Idempotency) -> Result<(), lambda_runtime::Error> {
/// let handler = idem_lambda::IdempotentHandler::builder(idem)
///     .name("orders")
///     .event_key("powertools_json(body).order_id")
///     .payload_validation("powertools_json(body).amount")
///     .build(service_fn(create_order));
/// lambda_runtime::run(handler).await
/// # }
/// ```
///
/// - The key is what the [`event_key`](IdempotentHandlerBuilder::event_key) expression selects
///   from the event, under the handler's name.
/// - The key of an [HTTP event](crate::principal#http-events) (one whose `requestContext`
///   shows API Gateway's REST, HTTP or WebSocket API, a function URL, an ALB or VPC Lattice)
///   is its principal's alone: scoped by the principal the authorizer named ([the
///   rule](crate::principal#the-rule)), or the one
///   [`principal`](IdempotentHandlerBuilder::principal) gives, so that a caller who sends
///   another's key runs its own call, and a quota counts per principal. A keyed HTTP event
///   without a principal is refused ([`Error::Unscoped`]) unless
///   [`unscoped(Unscoped::Shared)`](IdempotentHandlerBuilder::unscoped) says otherwise.
/// - Other events (SQS, EventBridge, direct invokes, a Lambda destination's record) have
///   unscoped keys: their producer is trusted, and whoever can invoke the function can send
///   any key.
/// - A retry with the same key and the same key data (and
///   [`payload_validation`](IdempotentHandlerBuilder::payload_validation) data) gets the stored
///   response; with other data, [`Error::Idempotency`] with a mismatch
///   (`IdempotencyValidationError`). While the first invocation runs, a duplicate gets an
///   in-progress error (`IdempotencyAlreadyInProgressError`).
/// - The reservation lasts until the invocation's deadline: after a timeout, the next delivery
///   takes the key over and runs.
/// - When the handler fails, the key is released and a retry runs it again. When it panics,
///   its effect is unknown: the key is held until the invocation's deadline, as after a crash,
///   and a delivery after that runs it again. (Powertools deletes the record on any exception.)
pub struct IdempotentHandler<S> {
    inner: S,
    shared: Arc<Shared>,
}

/// What every clone of a handler shares.
struct Shared {
    idem: Idempotency,
    name: Option<String>,
    selector: Selector,
    raise_on_no_key: bool,
    scoping: Scoping,
    options: CallOptions,
    response_hook: Option<Box<ResponseHook>>,
}

impl<S: Clone> Clone for IdempotentHandler<S> {
    fn clone(&self) -> Self {
        IdempotentHandler {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl IdempotentHandler<()> {
    /// Starts a handler on `idem`, whose store keeps the records (DynamoDB, as Powertools does,
    /// or any other).
    pub fn builder(idem: Idempotency) -> IdempotentHandlerBuilder {
        IdempotentHandlerBuilder {
            idem,
            name: None,
            key: None,
            validation: None,
            raise_on_no_key: true,
            partial_keys: false,
            scoping: Scoping::default(),
            options: CallOptions::default(),
            response_hook: None,
        }
    }
}

/// Configures an [`IdempotentHandler`]; [`event_key`](Self::event_key) is required.
pub struct IdempotentHandlerBuilder {
    idem: Idempotency,
    name: Option<String>,
    key: Option<Result<EventPath, ExpressionError>>,
    validation: Option<Result<EventPath, ExpressionError>>,
    raise_on_no_key: bool,
    partial_keys: bool,
    scoping: Scoping,
    options: CallOptions,
    response_hook: Option<Box<ResponseHook>>,
}

impl IdempotentHandlerBuilder {
    /// The function name keys are made under; by default the Lambda function's own name from
    /// the invocation's context. Name it when two functions must share records, or when a
    /// renamed function must keep its own.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The JMESPath expression that selects the idempotency key from the event, as Powertools
    /// writes it (`powertools_json(body).order_id`, `[customer, order_id]`,
    /// `headers."Idempotency-Key"`).
    ///
    /// On an HTTP event, header names match whatever their case, as in HTTP:
    /// `headers."Idempotency-Key"` finds the `idempotency-key` that HTTP APIs, function URLs
    /// and `aws_lambda_events`' typed requests write in lower case. The key of an HTTP event
    /// is scoped by its principal (see [`principal`](Self::principal)).
    ///
    /// What Powertools' functions decode is bounded: `powertools_base64_gzip` inflates at
    /// most [`MAX_GZIP_INFLATED_BYTES`](crate::MAX_GZIP_INFLATED_BYTES) (8 MiB), and the
    /// three together take at most [`MAX_DECODED_BYTES`](crate::MAX_DECODED_BYTES) (32 MiB)
    /// of memory per evaluation; an event past a bound is refused and nothing runs.
    /// `powertools_json(body).order_id` builds only the body's `order_id`: a 1 MiB JSON body
    /// read so raises the memory an event takes by 1 MiB, read whole
    /// (`powertools_json(body)`) by 21 MiB.
    pub fn event_key(mut self, expression: &str) -> Self {
        self.key = Some(EventPath::parse(expression));
        self
    }

    /// Names the principal an event belongs to, in place of the one its request context
    /// names ([`principal_of_event`](crate::principal::principal_of_event), by default): a
    /// tenant an authorizer puts in its context under another name, say. The key is stored
    /// under that principal's scope, so that two principals never share a key, and a
    /// [`ScopeQuota`](idem_core::ScopeQuota) counts each one's records apart.
    ///
    /// It is asked for every event. For an HTTP event, `None` (or a blank name) refuses a
    /// keyed event as [`Error::Unscoped`], unless [`unscoped`](Self::unscoped) shares one
    /// key space; for any other event (SQS, a direct invoke), `None` leaves its key unscoped.
    ///
    /// ```
    /// # fn demo(idem: idem_core::Idempotency) {
    /// use serde_json::Value;
    ///
    /// let builder = idem_lambda::IdempotentHandler::builder(idem)
    ///     .event_key("headers.\"Idempotency-Key\"")
    ///     .principal(|event: &Value, _: &lambda_runtime::Context| {
    ///         let tenant = event.pointer("/requestContext/authorizer/lambda/tenantId")?;
    ///         Some(format!("tenant:{}", tenant.as_str()?))
    ///     });
    /// # let _ = builder; }
    /// ```
    pub fn principal<F>(mut self, principal: F) -> Self
    where
        F: Fn(&serde_json::Value, &lambda_runtime::Context) -> Option<String>
            + Send
            + Sync
            + 'static,
    {
        self.scoping.principal = Some(Box::new(principal));
        self
    }

    /// What happens to a keyed HTTP event without a principal: [`Unscoped::Refused`] by
    /// default ([`Error::Unscoped`], `IdempotencyKeyError`, and nothing runs), or
    /// [`Unscoped::Shared`]: one key space for every such event, as before principals were
    /// read, for a function whose callers are all one party.
    ///
    /// ```
    /// # fn demo(idem: idem_core::Idempotency) {
    /// use idem_lambda::Unscoped;
    ///
    /// // A route only the team's own services call, behind no authorizer.
    /// let builder = idem_lambda::IdempotentHandler::builder(idem)
    ///     .event_key("headers.\"Idempotency-Key\"")
    ///     .unscoped(Unscoped::Shared);
    /// # let _ = builder; }
    /// ```
    pub fn unscoped(mut self, unscoped: Unscoped) -> Self {
        self.scoping.unscoped = unscoped;
        self
    }

    /// Keys every principal with `secret`, a secret of the function, before it reaches the
    /// store: the stored scope is the HMAC-SHA256 of the principal under it
    /// ([`idem_protocol::scope::keyed_scope`], as idem-http's `scope_secret`), so that no
    /// one who reads the store learns whose records they are. Every function sharing records
    /// needs the same secret, and changing it changes every scope, so that records stored
    /// before are not found.
    ///
    /// # Panics
    ///
    /// On a secret shorter than
    /// [`MIN_SCOPE_SECRET_BYTES`](idem_protocol::scope::MIN_SCOPE_SECRET_BYTES) (32) bytes,
    /// at cold start: an unset variable read as empty never passes for one.
    pub fn scope_secret(mut self, secret: impl AsRef<[u8]>) -> Self {
        self.scoping.secret = Some(idem_protocol::scope::ScopeKey::new(secret.as_ref()));
        self
    }

    /// A JMESPath expression for data a retry must repeat besides the key (an amount): a retry
    /// with the same key and other data here is refused rather than replayed. Data compares
    /// as JSON values, numbers by value (`100` and `100.0` are one amount): see
    /// [Numbers](crate#numbers).
    pub fn payload_validation(mut self, expression: &str) -> Self {
        self.validation = Some(EventPath::parse(expression));
        self
    }

    /// Whether an event without a key is refused (`true`, the default) or run without
    /// idempotency (`false`). Powertools' option of the same name defaults to `false`; here
    /// an event that slipped through without its key is not run unprotected unless asked for.
    pub fn raise_on_no_idempotency_key(mut self, raise: bool) -> Self {
        self.raise_on_no_key = raise;
        self
    }

    /// Calls `hook` with every replayed response, as JSON, and answers what it returns instead
    /// (Powertools' `response_hook`): to mark a replay (a header, a field), or to trim what a
    /// retry is told. The handler's own first response is not passed to it. A hook's answer
    /// that is not the handler's response type fails the invocation.
    ///
    /// ```
    /// # fn demo(idem: idem_core::Idempotency) {
    /// use serde_json::Value;
    ///
    /// let builder = idem_lambda::IdempotentHandler::builder(idem)
    ///     .event_key("powertools_json(body).order_id")
    ///     .response_hook(|mut response: Value, replay| {
    ///         response["headers"]["x-idempotent-replay"] = replay.request_id().into();
    ///         response
    ///     });
    /// # let _ = builder; }
    /// ```
    pub fn response_hook<F>(mut self, hook: F) -> Self
    where
        F: Fn(serde_json::Value, &Replay<'_>) -> serde_json::Value + Send + Sync + 'static,
    {
        self.response_hook = Some(Box::new(hook));
        self
    }

    /// Takes a key of several parts (`[customer, order_id]`, `{c: customer, o: order_id}`)
    /// with some of them missing (`null`, or an empty string), as Powertools does. By default
    /// such an event has no key (see
    /// [`raise_on_no_idempotency_key`](Self::raise_on_no_idempotency_key)): without its
    /// `order_id`, that key would be one for every order of the customer, and the second order
    /// would get the first one's response.
    ///
    /// The value selected is judged, not the expression's shape: a part missing from a
    /// multi-select at any depth (`[customer, [order_id, sku]]`), or then flattened away
    /// (`[customer, order_id][]`) or filtered away (`[customer, order_id] | [?@ != null]`),
    /// a projection that drops an element the path after it finds nothing in
    /// (`lines[*].sku`, where a filter's choice is no loss), and `to_string(order_id)` or
    /// `type(order_id)` of a missing `order_id` (the text `"null"`) are each a missing part.
    pub fn allow_partial_keys(mut self) -> Self {
        self.partial_keys = true;
        self
    }

    /// How long a response is replayed, from the moment it was stored; 24 hours unless set
    /// (Powertools' `expires_after_seconds` defaults to one hour).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.options.ttl = ttl;
        self
    }

    /// The handler around `inner`.
    ///
    /// # Panics
    ///
    /// When no [`event_key`](Self::event_key) was set, or an expression is not valid JMESPath:
    /// at cold start, with the expression and what is wrong with it. [`try_build`](Self::try_build)
    /// returns the error instead.
    pub fn build<S>(self, inner: S) -> IdempotentHandler<S> {
        match self.try_build(inner) {
            Ok(handler) => handler,
            Err(error) => panic!("idem_lambda::IdempotentHandler: {error}"),
        }
    }

    /// The handler around `inner`, or why the configuration is not valid.
    pub fn try_build<S>(self, inner: S) -> Result<IdempotentHandler<S>, ExpressionError> {
        let key = self.key.unwrap_or_else(|| Err(no_event_key()))?;
        let validation = self.validation.transpose()?;
        Ok(IdempotentHandler {
            inner,
            shared: Arc::new(Shared {
                idem: self.idem,
                name: self.name,
                selector: Selector {
                    key,
                    validation,
                    partial_keys: self.partial_keys,
                },
                raise_on_no_key: self.raise_on_no_key,
                scoping: self.scoping,
                options: self.options,
                response_hook: self.response_hook,
            }),
        })
    }
}

impl IdempotentHandlerBuilder {
    /// The key the handler this builder builds stores `event` under, invoked with `context`:
    /// its name (or the context's function name), the scope of the event's principal (keyed
    /// with the [`scope_secret`](Self::scope_secret)), and the parts of what the
    /// [`event_key`](Self::event_key) expression selects, by the one rule the handler keys
    /// by. What `idem key lambda` prints, so that an operator can go from an event to its
    /// record. An event the handler would refuse or run without a key is the error it would
    /// give ([`Error::KeyMissing`], [`Error::Unscoped`], [`Error::Expression`]...).
    ///
    /// ```
    /// use idem_core::Idempotency;
    /// use idem_stores::memory::MemoryStore;
    /// use serde_json::json;
    ///
    /// let builder = idem_lambda::IdempotentHandler::builder(Idempotency::new(MemoryStore::new()))
    ///     .name("orders")
    ///     .event_key("[customer, powertools_json(body).order_id]");
    /// let event = json!({"customer": "c-7", "body": "{\"order_id\": \"o-42\"}"});
    /// let key = builder.stored_key(&event, &lambda_runtime::Context::default()).unwrap();
    /// assert_eq!(key.as_str(), "idem|orders|-|#list|c-7|o-42");
    /// ```
    pub fn stored_key<T: Serialize + std::any::Any>(
        &self,
        event: &T,
        context: &lambda_runtime::Context,
    ) -> Result<idem_core::Key, Error<std::convert::Infallible>> {
        let key = match &self.key {
            Some(key) => key.clone().map_err(Error::Expression)?,
            None => return Err(Error::Expression(no_event_key())),
        };
        let selector = Selector {
            key,
            validation: self
                .validation
                .clone()
                .transpose()
                .map_err(Error::Expression)?,
            partial_keys: self.partial_keys,
        };
        let name = invocation::name(self.name.as_deref(), context).ok_or(Error::Unnamed)?;
        let scope = |data: &_| self.scoping.scope_of(data, context);
        match selector.select(&self.idem, name, event, scope) {
            Ok(selected) => Ok(selected.key),
            Err(unselected) => Err(unselected.into_error(&selector)),
        }
    }
}

/// The error of a builder given no key expression.
fn no_event_key() -> ExpressionError {
    ExpressionError {
        expression: String::new(),
        message: "no event_key: set the expression that selects the key".into(),
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, T> Service<LambdaEvent<T>> for IdempotentHandler<S>
where
    S: Service<LambdaEvent<T>> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Serialize + DeserializeOwned + Send,
    S::Error: Send,
    T: Serialize + Send + 'static,
{
    type Response = S::Response;
    type Error = Error<S::Error>;
    type Future = BoxFuture<Result<S::Response, Error<S::Error>>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Error::Handler)
    }

    fn call(&mut self, event: LambdaEvent<T>) -> Self::Future {
        // The clone that was made ready serves this event; the new one waits for its turn.
        let fresh = self.inner.clone();
        let mut ready = std::mem::replace(&mut self.inner, fresh);
        let shared = self.shared.clone();
        Box::pin(async move {
            let Some(name) = invocation::name(shared.name.as_deref(), &event.context) else {
                return Err(Error::Unnamed);
            };
            let scope = |data: &_| shared.scoping.scope_of(data, &event.context);
            let selected = match shared
                .selector
                .select(&shared.idem, name, &event.payload, scope)
            {
                Ok(selected) => selected,
                Err(Unselected::Missing) if !shared.raise_on_no_key => {
                    tracing::warn!(
                        target: crate::TARGET,
                        expression = shared.selector.key.as_str(),
                        "the event has no idempotency key; running it without idempotency"
                    );
                    return ready.call(event).await.map_err(Error::Handler);
                }
                Err(unselected) => return Err(unselected.into_error(&shared.selector)),
            };
            let key = shared.response_hook.as_ref().map(|_| selected.key.clone());
            let request_id = event.context.request_id.clone();
            let call = shared.options.call(&shared.idem, selected, &event.context);
            // The handler is called only once the key is reserved: a service may start work in
            // `call` itself, before its future is polled.
            let body = async move { ready.call(event).await.map_err(Error::Handler) };
            let done = shared.idem.run(call, body).await?;
            match (&shared.response_hook, key) {
                (Some(hook), Some(key)) if done.replayed => {
                    let replay = Replay {
                        key: &key,
                        request_id: &request_id,
                    };
                    hooked(hook, done.value, &replay)
                }
                _ => Ok(done.value),
            }
        })
    }
}

/// `response` as `hook` makes it, read back as the handler's response type.
fn hooked<R, E>(hook: &ResponseHook, response: R, replay: &Replay<'_>) -> Result<R, Error<E>>
where
    R: Serialize + DeserializeOwned,
{
    let codec =
        |error: serde_json::Error| Error::Idempotency(idem_core::Error::Codec(error.into()));
    let json = serde_json::to_value(response).map_err(codec)?;
    serde_json::from_value(hook(json, replay)).map_err(codec)
}
