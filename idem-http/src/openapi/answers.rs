//! Which problem answers a layer gives to a request of a method it protects, with which status
//! and `Retry-After`: read from its settings, so that the document says what the layer does.

use http::StatusCode;

use crate::config::Config;
use crate::request::scope::Unscoped;
use crate::response::problem::{whole_seconds, ProblemType};

/// What a problem answer's `Retry-After` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RetryAfter {
    /// Whole seconds, at most this many (the layer's
    /// [`retry_after`](crate::IdempotencyLayerBuilder::retry_after), or less when the running
    /// request's lease ends sooner).
    AtMost(u64),
    /// Whole seconds, when the client's quota may have room again.
    FromQuota,
}

/// One problem answer of the layer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Answer {
    pub(crate) problem: ProblemType,
    pub(crate) status: StatusCode,
    pub(crate) retry_after: Option<RetryAfter>,
    /// Whether it is read from the key's record, so that a retry gets it with
    /// `Idempotent-Replayed: true`.
    pub(crate) replayed: bool,
}

impl Answer {
    fn of(problem: ProblemType) -> Self {
        Answer {
            problem,
            status: problem.status(),
            retry_after: None,
            replayed: false,
        }
    }
}

/// The client errors the layer with `config` answers a request of a method it protects with,
/// by status: a bad key (and a missing one, when it requires one), a keyed request without a
/// scope (unless it lets them through or shares them), a body it cannot read or that is too
/// large, a key in progress, a response not kept, a key reused, and a quota exceeded (only when
/// the layer has a quota). Its server errors (500, 503) are not among them.
pub(crate) fn client_errors(config: &Config) -> Vec<Answer> {
    let mut answers = vec![
        Answer::of(ProblemType::KeyInvalid),
        Answer::of(ProblemType::BodyUnreadable),
        Answer::of(ProblemType::BodyTooLarge),
        Answer {
            replayed: true,
            ..Answer::of(ProblemType::ResponseNotKept)
        },
        Answer {
            retry_after: Some(RetryAfter::AtMost(whole_seconds(config.retry_after))),
            ..Answer::of(ProblemType::InProgress)
        },
        Answer {
            status: config.mismatch.status(),
            ..Answer::of(ProblemType::KeyReused)
        },
    ];
    if config.require_key {
        answers.push(Answer::of(ProblemType::KeyMissing));
    }
    if config.unscoped == Unscoped::Refused {
        answers.push(Answer::of(ProblemType::Unscoped));
    }
    if config.idem.quota().is_some() {
        answers.push(Answer {
            retry_after: Some(RetryAfter::FromQuota),
            ..Answer::of(ProblemType::QuotaExceeded)
        });
    }
    answers.sort_by_key(|answer| answer.status);
    answers
}
