//! What an idempotent handler answers when it cannot run or replay, and how Lambda logs it.

use std::fmt;

use idem_protocol::problem::ProblemType;
use lambda_runtime::Diagnostic;

use crate::ExpressionError;

/// The error of an [`IdempotentHandler`](crate::IdempotentHandler): the handler's own, or why
/// idempotency stopped the invocation.
///
/// Lambda reports it with an `errorType` that names the case, with Powertools' own names
/// wherever Powertools has the case, so that alarms and log queries written for Powertools
/// keep working; see [`error_type`](Error::error_type).
#[derive(Debug)]
pub enum Error<E> {
    /// The handler ran and failed. The key was released, so a retry runs it again.
    Handler(E),
    /// The event has no idempotency key: the key expression selected `null` or nothing.
    /// Nothing ran. Allow it with
    /// [`raise_on_no_idempotency_key(false)`](crate::IdempotentHandlerBuilder::raise_on_no_idempotency_key).
    KeyMissing {
        /// The key expression.
        expression: String,
    },
    /// An HTTP event (API Gateway, a function URL, an ALB) came with a key but no principal:
    /// its route has no authorizer, or the principal function found none. Nothing ran. Its
    /// key would be shared with every caller without one, who could read its answer by
    /// sending it. Put an authorizer in front of the function, name the principal with
    /// [`principal`](crate::IdempotentHandlerBuilder::principal), or share one key space with
    /// [`unscoped(Unscoped::Shared)`](crate::IdempotentHandlerBuilder::unscoped).
    Unscoped {
        /// The key expression.
        expression: String,
    },
    /// A key or validation expression failed over the event (a `powertools_json` over text
    /// that is not JSON, say). Nothing ran.
    Expression(ExpressionError),
    /// The handler has no name: the Lambda context gave none. Name it with
    /// [`name`](crate::IdempotentHandlerBuilder::name).
    Unnamed,
    /// What idem said: an invocation with this key is running ([`idem_core::Error::InProgress`]),
    /// the key came with another payload ([`idem_core::Error::Mismatch`]), the store failed,
    /// and the rest.
    Idempotency(idem_core::Error),
}

impl<E> Error<E> {
    /// The row of the contract's error vocabulary this error stands for
    /// ([`idem_protocol::problem`]), `None` for the handler's own: the same row, and so the
    /// same `errorType` and wording, as the attribute and the HTTP layer give the case.
    pub fn problem_type(&self) -> Option<ProblemType> {
        Some(match self {
            Error::Handler(_) => return None,
            Error::KeyMissing { .. } => ProblemType::KeyMissing,
            Error::Unscoped { .. } => ProblemType::Unscoped,
            Error::Expression(_) => ProblemType::KeyInvalid,
            Error::Unnamed => ProblemType::Misconfigured,
            Error::Idempotency(error) => error.problem_type(),
        })
    }

    /// The `errorType` Lambda reports: its [problem type](Error::problem_type)'s
    /// ([`ProblemType::lambda_error_type`]), Powertools' own names wherever Powertools has the
    /// case.
    ///
    /// | case | `errorType` |
    /// |---|---|
    /// | [`Handler`](Error::Handler) | the handler's own |
    /// | in progress | `IdempotencyAlreadyInProgressError` |
    /// | same key, another payload | `IdempotencyValidationError` |
    /// | no key, a failed expression, an invalid key | `IdempotencyKeyError` |
    /// | a keyed HTTP event without a principal | `IdempotencyKeyError` |
    /// | no name, no handle installed | `IdempotencyConfigError` |
    /// | ran, but its outcome was not recorded | `IdempotencyNotRecordedError` |
    /// | over the scope's quota | `IdempotencyQuotaExceededError` |
    /// | over the quota's total, every scope together | `IdempotencyStoreFullError` |
    /// | a store that failed or refused, a corrupt record | `IdempotencyPersistenceLayerError` |
    ///
    /// "Not recorded" has a name of its own, not Powertools' catch-all persistence error,
    /// because it asks the opposite of it: the handler ran, so check its effect before
    /// invoking again, where a store that failed before anything ran asks for a retry.
    pub fn error_type(&self) -> Option<&'static str> {
        self.problem_type().map(ProblemType::lambda_error_type)
    }
}

impl<E> From<idem_core::Error> for Error<E> {
    fn from(error: idem_core::Error) -> Self {
        Error::Idempotency(error)
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Handler(error) => fmt::Display::fmt(error, f),
            other => describe(other, f),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for Error<E> {}

impl<E: Into<Diagnostic>> From<Error<E>> for Diagnostic {
    fn from(error: Error<E>) -> Diagnostic {
        let Some(error_type) = error.error_type() else {
            let Error::Handler(handler) = error else {
                unreachable!("only a handler's error has no type of its own")
            };
            return handler.into();
        };
        Diagnostic {
            error_type: error_type.to_owned(),
            error_message: Described(&error).to_string(),
        }
    }
}

/// What went wrong, for every case but the handler's own error.
pub(crate) fn describe_to_string<E>(error: &Error<E>) -> String {
    Described(error).to_string()
}

/// An error's description, whatever the handler's error is.
struct Described<'a, E>(&'a Error<E>);

impl<E> fmt::Display for Described<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        describe(self.0, f)
    }
}

/// Says what went wrong and what to do, for every case but the handler's own.
fn describe<E>(error: &Error<E>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match error {
        Error::Handler(_) => f.write_str("the handler failed"),
        Error::KeyMissing { expression } => write!(
            f,
            "the event has no idempotency key: `{expression}` selected nothing; send the key, \
             or allow events without one with raise_on_no_idempotency_key(false)"
        ),
        Error::Unscoped { expression } => write!(
            f,
            "the idempotency key that `{expression}` selected {}; the event names no principal \
             (its route has no authorizer): put an authorizer in front of the function, name \
             the principal with .principal(...), or share one key space among all callers \
             with .unscoped(Unscoped::Shared)",
            ProblemType::Unscoped.message()
        ),
        Error::Expression(error) => write!(f, "{error}; nothing ran"),
        Error::Unnamed => {
            f.write_str("the Lambda context names no function; name the handler with .name(...)")
        }
        Error::Idempotency(error) => {
            fmt::Display::fmt(error, f)?;
            if let idem_core::Error::InProgress { retry_after, .. } = error {
                let seconds = retry_after.as_secs_f64().ceil();
                write!(
                    f,
                    " (retry in {seconds} s at the latest, when its lease ends)"
                )?;
            }
            // The backend's own words say what to fix: a denied permission, a missing table.
            let mut cause = std::error::Error::source(error);
            while let Some(error) = cause {
                write!(f, ": {error}")?;
                cause = error.source();
            }
            Ok(())
        }
    }
}
