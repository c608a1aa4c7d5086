//! The scope a handler's key is stored under: the principal of an HTTP event, and what is
//! done with a keyed HTTP event that has none.

use std::fmt;

use idem_protocol::scope::{effective, ScopeKey};
use lambda_runtime::Context;
use serde_json::Value;

use crate::expression::EventData;

/// A function that names the principal of an event.
pub(crate) type PrincipalFn = dyn Fn(&Value, &Context) -> Option<String> + Send + Sync;

/// What an [`IdempotentHandler`](crate::IdempotentHandler) does with a keyed [HTTP
/// event](crate::principal#http-events) (API Gateway, a function URL, an ALB, VPC Lattice)
/// that has no principal. Set
/// with [`unscoped`](crate::IdempotentHandlerBuilder::unscoped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unscoped {
    /// Refused with [`Error::Unscoped`](crate::Error::Unscoped)
    /// (`IdempotencyKeyError`); nothing runs. The default: a key without a principal would be
    /// shared with every other client without one, who could read its answer by sending it.
    #[default]
    Refused,
    /// Given one key space shared by every event without a principal, as non-HTTP events are.
    /// Only for functions whose callers are all one party (a route only other services of
    /// one team call, say): any caller that guesses another's key gets its answer, and a
    /// quota is one allowance for all of them.
    Shared,
}

/// How a handler finds an event's scope.
pub(crate) struct Scoping {
    pub(crate) principal: Option<Box<PrincipalFn>>,
    pub(crate) secret: Option<ScopeKey>,
    pub(crate) unscoped: Unscoped,
}

/// An event's scope, or why it has none it may be keyed without.
pub(crate) enum Scope {
    /// The key is stored under this scope, or none.
    Of(Option<String>),
    /// An HTTP event without a principal, refused.
    Refused,
}

impl Scoping {
    /// The scope of `event`: its principal (the function's, or by default the request
    /// context's), keyed with the secret when there is one. An HTTP event without a principal
    /// is refused unless the shared space was chosen; other events have no scope unless the
    /// function gives one, since their producer is trusted.
    pub(crate) fn scope_of(&self, event: &EventData, context: &Context) -> Scope {
        let principal = match &self.principal {
            Some(principal) => principal(&event.to_value(), context),
            None => event
                .request_context()
                .and_then(|context| crate::principal::principal_of_request_context(&context)),
        };
        match effective(principal.as_deref()) {
            Some(principal) => Scope::Of(Some(match &self.secret {
                Some(secret) => secret.keyed(principal),
                None => principal.to_owned(),
            })),
            None if event.is_http() && self.unscoped == Unscoped::Refused => Scope::Refused,
            None => Scope::Of(None),
        }
    }
}

impl Default for Scoping {
    fn default() -> Self {
        Scoping {
            principal: None,
            secret: None,
            unscoped: Unscoped::Refused,
        }
    }
}

impl fmt::Debug for Scoping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scoping")
            .field("principal", &self.principal.as_ref().map(|_| ".."))
            .field("secret", &self.secret.is_some())
            .field("unscoped", &self.unscoped)
            .finish()
    }
}
