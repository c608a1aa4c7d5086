//! Which requests are the layer's, read from the request's head alone: a request refused, or
//! passed through, for its method, key or scope is not read first.

use http::request::Parts;
use http::Response;
use idem_protocol::scope::effective;

use crate::answer;
use crate::asked::Asked;
use crate::body::Body;
use crate::config::{Config, ScopeMissing};
use crate::request::key_header::{self, KeyHeader};
use crate::request::scope::Unscoped;
use crate::telemetry::RequestOutcome;
use crate::TARGET;

/// What the layer does with a request, by its head.
pub(crate) enum Admission {
    /// Not the layer's: the handler gets it untouched.
    PassThrough,
    /// Refused by the layer with this answer; nothing ran.
    Refused(RequestOutcome, Response<Body>),
    /// The layer's: its body is read next.
    Keyed(Keyed),
}

/// A request the layer handles: the client's key, whose key it is, and what the client asked
/// for that shapes the layer's answers.
pub(crate) struct Keyed {
    pub(crate) key: String,
    /// The scope as stored: keyed with the layer's secret, if it has one.
    pub(crate) scope: Option<String>,
    pub(crate) asked: Asked,
}

/// Admits the request whose head is `parts`; `read_scope` reads whose request it is, as the
/// front end finds its principal.
pub(crate) fn admit(
    config: &Config,
    parts: &Parts,
    read_scope: impl FnOnce(&Parts) -> Result<Option<String>, ScopeMissing>,
) -> Admission {
    use RequestOutcome::*;
    if !config.methods.contains(&parts.method) {
        return Admission::PassThrough;
    }
    let asked = Asked::of(&parts.headers);
    let key = match key_header::read(&parts.headers) {
        KeyHeader::Present(key) => key,
        KeyHeader::Absent if config.require_key => {
            return Admission::Refused(KeyRefused, asked.render(answer::key_missing()))
        }
        KeyHeader::Absent => return Admission::PassThrough,
        KeyHeader::Invalid(reason) => {
            let received = key_header::as_received(&parts.headers);
            let answer = asked.render(answer::key_invalid(&received, reason));
            return Admission::Refused(KeyRefused, answer);
        }
    };
    let scope = match read_scope(parts) {
        // An empty principal is no principal: it would share one scope among all who gave it.
        Ok(scope) => match (effective(scope.as_deref()), &config.scope_secret) {
            (None, _) => None,
            (Some(scope), Some(secret)) => Some(secret.keyed(scope)),
            (Some(_), None) => scope,
        },
        Err(missing) => {
            tracing::error!(target: TARGET, key = config.logged_key(&key), "the request's scope cannot be read as the layer is set up: {}", missing.describe());
            let answer = asked.render(answer::scope_missing(&key, &missing));
            return Admission::Refused(ScopeRefused, answer);
        }
    };
    if scope.is_none() {
        match config.unscoped {
            Unscoped::Refused => {
                tracing::debug!(target: TARGET, key = config.logged_key(&key), "keyed request without a scope refused");
                return Admission::Refused(ScopeRefused, asked.render(answer::unscoped(&key)));
            }
            Unscoped::PassedThrough => {
                tracing::debug!(target: TARGET, key = config.logged_key(&key), "keyed request without a scope passed through");
                return Admission::PassThrough;
            }
            Unscoped::Shared => {}
        }
    }
    Admission::Keyed(Keyed { key, scope, asked })
}
