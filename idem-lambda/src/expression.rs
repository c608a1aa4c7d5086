//! JMESPath expressions over an event, with Powertools' own functions.

use std::fmt;
use std::sync::{Arc, LazyLock};

use jmespath::ast::Ast;
use jmespath::{Expression, Runtime};
use serde::Serialize;
use serde_json::Value;

use crate::{headers, powertools, tracked};

/// Compiles every expression: JMESPath's built-in functions, and `powertools_json`,
/// `powertools_base64` and `powertools_base64_gzip` as Powertools defines them.
static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    let mut runtime = Runtime::new();
    runtime.register_builtin_functions();
    powertools::register(&mut runtime);
    runtime
});

/// A compiled JMESPath expression that picks data out of an event, such as
/// `powertools_json(body).order_id`.
///
/// ```
/// let path = idem_lambda::EventPath::parse("powertools_json(body).order_id").unwrap();
/// let event = serde_json::json!({"body": "{\"order_id\": \"o-42\", \"amount\": 3}"});
/// assert_eq!(path.select(&event).unwrap(), serde_json::json!("o-42"));
/// ```
///
/// On an [HTTP event](crate::principal#http-events) (API Gateway, a function URL, an ALB), the
/// header names it reads under `headers` and `multiValueHeaders` match whatever their case,
/// as HTTP has them: `headers."Idempotency-Key"` finds the `idempotency-key` of a typed
/// `ApiGatewayProxyRequest`, which writes every name in lower case.
#[derive(Clone)]
pub struct EventPath {
    compiled: Arc<Expression<'static>>,
    /// The header names the expression reads, matched whatever their case.
    headers: Arc<[String]>,
}

impl EventPath {
    /// Compiles `expression`, or says where it is not valid JMESPath.
    pub fn parse(expression: &str) -> Result<EventPath, ExpressionError> {
        let refused = |message: String| ExpressionError {
            expression: expression.to_owned(),
            message,
        };
        let compiled = RUNTIME
            .compile(expression)
            .map_err(|error| refused(error.to_string()))?;
        // JMESPath finds an unknown function only when it runs; refuse it now instead of
        // failing every event.
        if let Some(unknown) = unknown_function(compiled.as_ast()) {
            return Err(refused(format!(
                "no function `{unknown}` (JMESPath's own functions and powertools_json, \
                 powertools_base64, powertools_base64_gzip are known)"
            )));
        }
        let headers = headers::names_read(compiled.as_ast()).into();
        Ok(EventPath {
            compiled: Arc::new(compiled),
            headers,
        })
    }

    /// The expression as it was written.
    pub fn as_str(&self) -> &str {
        self.compiled.as_str()
    }

    /// Evaluates the expression over `event`: JSON `null` when it selects nothing.
    pub fn select<T: Serialize + ?Sized>(&self, event: &T) -> Result<Value, ExpressionError> {
        let mut data = EventData::of(event).map_err(|message| self.failed(message))?;
        data.match_headers(self)?;
        self.select_in(&data)
    }

    /// Evaluates the expression over an event already read, so that several expressions over
    /// one event read it once. The event's headers must have been
    /// [matched](EventData::match_headers) to this expression's.
    pub(crate) fn select_in(&self, data: &EventData) -> Result<Value, ExpressionError> {
        self.select_parts_in(data).map(|(found, _)| found)
    }

    /// Evaluates the expression over an event already read, as
    /// [`select_in`](Self::select_in), and says whether the value it selects lost a part of
    /// the event on the way ([`tracked`](crate::tracked)): `[customer, order_id]` without
    /// `order_id`, however it is then flattened, filtered or turned into text.
    pub(crate) fn select_parts_in(
        &self,
        data: &EventData,
    ) -> Result<(Value, bool), ExpressionError> {
        let mut ctx = jmespath::Context::new(self.as_str(), &RUNTIME);
        let searched = powertools::within_budget(|| {
            tracked::search(&data.0, self.compiled.as_ast(), &mut ctx)
        });
        let (found, lost) = searched.map_err(|error| {
            self.failed(match error.reason {
                // Only Powertools' functions fail so once an expression has compiled: the
                // event, not the expression, is at fault, and JMESPath's caret under the
                // expression would say otherwise.
                jmespath::ErrorReason::Parse(why) => {
                    format!("the event does not hold what the expression reads: {why}")
                }
                _ => error.to_string(),
            })
        })?;
        let found =
            serde_json::to_value(&*found).map_err(|error| self.failed(error.to_string()))?;
        Ok((found, lost))
    }

    /// The header names the expression reads under `headers` and `multiValueHeaders`.
    pub(crate) fn header_names(&self) -> &[String] {
        &self.headers
    }

    pub(crate) fn failed(&self, message: String) -> ExpressionError {
        ExpressionError {
            expression: self.as_str().to_owned(),
            message,
        }
    }
}

/// An event as JMESPath reads it.
pub(crate) struct EventData(jmespath::Rcvar);

impl EventData {
    /// Reads `event` through serde_json's text, which writes every event Lambda can (maps with
    /// integer keys, 128-bit numbers), where JMESPath's own serializer and serde_json's
    /// `Value` refuse some.
    pub(crate) fn of<T: Serialize + ?Sized>(event: &T) -> Result<EventData, String> {
        let text = serde_json::to_string(event).map_err(|error| error.to_string())?;
        let data = jmespath::Variable::from_json(&text)?;
        Ok(EventData(Arc::new(data)))
    }

    /// Reads an event held as JSON, without writing it out and parsing it again.
    pub(crate) fn of_json(event: &Value) -> Result<EventData, String> {
        let data = jmespath::Variable::try_from(event).map_err(|error| error.to_string())?;
        Ok(EventData(Arc::new(data)))
    }

    /// Whether the event is an [HTTP event](crate::principal#http-events): one whose
    /// `requestContext` shows an HTTP front end (API Gateway's REST, HTTP and WebSocket APIs,
    /// a function URL, an ALB, VPC Lattice).
    pub(crate) fn is_http(&self) -> bool {
        self.request_context().is_some()
    }

    /// An HTTP event's `requestContext`, as JSON.
    pub(crate) fn request_context(&self) -> Option<Value> {
        let context = self.field("requestContext")?;
        if !context.is_object() {
            return None;
        }
        serde_json::to_value(&**context)
            .ok()
            .filter(crate::principal::is_http_request_context)
    }

    /// The whole event, as JSON.
    pub(crate) fn to_value(&self) -> Value {
        serde_json::to_value(&*self.0).unwrap_or(Value::Null)
    }

    /// Gives an HTTP event's headers the names `path` reads them by, whatever case the event
    /// has them in; a header the event holds under two spellings with different values
    /// matches neither, and is refused.
    pub(crate) fn match_headers(&mut self, path: &EventPath) -> Result<(), ExpressionError> {
        if path.header_names().is_empty() || !self.is_http() {
            return Ok(());
        }
        headers::match_names(&mut self.0, path.header_names())
            .map_err(|message| path.failed(message))
    }

    fn field(&self, name: &str) -> Option<&jmespath::Rcvar> {
        self.0.as_object()?.get(name)
    }
}

/// The first function `ast` calls that the runtime does not know.
fn unknown_function(ast: &Ast) -> Option<&str> {
    match ast {
        Ast::Function { name, args, .. } => match RUNTIME.get_function(name) {
            None => Some(name.as_str()),
            Some(_) => first_unknown(args),
        },
        Ast::Comparison { lhs, rhs, .. }
        | Ast::Projection { lhs, rhs, .. }
        | Ast::And { lhs, rhs, .. }
        | Ast::Or { lhs, rhs, .. }
        | Ast::Subexpr { lhs, rhs, .. } => first_unknown([&**lhs, &**rhs]),
        Ast::Condition {
            predicate, then, ..
        } => first_unknown([&**predicate, &**then]),
        Ast::Expref { ast: node, .. }
        | Ast::Flatten { node, .. }
        | Ast::Not { node, .. }
        | Ast::ObjectValues { node, .. } => unknown_function(node),
        Ast::MultiList { elements, .. } => first_unknown(elements),
        Ast::MultiHash { elements, .. } => first_unknown(elements.iter().map(|pair| &pair.value)),
        Ast::Identity { .. }
        | Ast::Field { .. }
        | Ast::Index { .. }
        | Ast::Literal { .. }
        | Ast::Slice { .. } => None,
    }
}

fn first_unknown<'a>(nodes: impl IntoIterator<Item = &'a Ast>) -> Option<&'a str> {
    nodes.into_iter().find_map(unknown_function)
}

impl fmt::Debug for EventPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("EventPath").field(&self.as_str()).finish()
    }
}

/// An expression that does not compile, or that failed over an event (a `powertools_json`
/// over text that is not JSON, say).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("JMESPath expression `{expression}`: {message}")]
pub struct ExpressionError {
    /// The expression as it was written.
    pub expression: String,
    /// What JMESPath said.
    pub message: String,
}
