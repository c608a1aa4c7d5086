//! The retry table: which outcomes of an attempt are worth another attempt with the same key.

use std::fmt;
use std::time::{Duration, SystemTime};

use http::header::RETRY_AFTER;
use http::{HeaderMap, StatusCode};
use idem_protocol::problem::ProblemType;

use crate::config::Config;
use crate::problem::Problem;

/// What to do after an attempt.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Try again with the same key, after `retry_after` when the server named a wait.
    Retry {
        reason: Reason,
        retry_after: Option<Duration>,
    },
    /// Give this outcome to the caller.
    Final,
}

/// Why an attempt is retried, as the tracing events say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// No connection could be made: the request was not sent.
    NotConnected,
    /// The connection failed or timed out after the request may have left: the answer may be
    /// lost.
    NoAnswer,
    /// 409: the server is still processing the key.
    InProgress,
    /// 429.
    RateLimited,
    /// 502, 503, 504: the server or a gateway is unavailable for now.
    Unavailable(StatusCode),
    /// 500 without a "not recorded" problem type: a failure the server let go of the key for.
    ServerError,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::NotConnected => f.write_str("no connection"),
            Reason::NoAnswer => f.write_str("no answer"),
            Reason::InProgress => f.write_str("409: in progress"),
            Reason::RateLimited => f.write_str("429: rate limited"),
            Reason::Unavailable(status) => write!(f, "{}: unavailable", status.as_u16()),
            Reason::ServerError => f.write_str("500: server error"),
        }
    }
}

/// The verdict on an attempt that got no response.
pub(crate) fn on_error(error: &reqwest_middleware::Error) -> Verdict {
    let reqwest_middleware::Error::Reqwest(error) = error else {
        // Another middleware's own failure: not ours to repeat.
        return Verdict::Final;
    };
    let reason = if error.is_connect() {
        Reason::NotConnected
    } else if error.is_timeout() || error.is_request() {
        Reason::NoAnswer
    } else {
        return Verdict::Final;
    };
    Verdict::Retry {
        reason,
        retry_after: None,
    }
}

/// Whether the problem document of a response with `status` is read before judging it: for
/// the statuses that would be retried, and that a problem type can make final, and for a 400,
/// which may be a refused key without a principal.
pub(crate) fn reads_problem(status: StatusCode) -> bool {
    retry_reason(status).is_some() || status == ProblemType::Unscoped.status()
}

/// The problem type `problem` names, when it is one of the contract's.
pub(crate) fn problem_type(problem: &Problem) -> Option<ProblemType> {
    match problem {
        Problem::Read(Some(uri)) => ProblemType::from_uri(uri),
        _ => None,
    }
}

/// Why a response with `status` is worth another attempt, unless its problem says otherwise.
fn retry_reason(status: StatusCode) -> Option<Reason> {
    match status.as_u16() {
        409 => Some(Reason::InProgress),
        429 => Some(Reason::RateLimited),
        502..=504 => Some(Reason::Unavailable(status)),
        500 => Some(Reason::ServerError),
        _ => None,
    }
}

/// The verdict on a response with `status` and `headers`, which says `problem` of itself
/// when [`reads_problem`] had it read.
pub(crate) fn on_response(
    status: StatusCode,
    headers: &HeaderMap,
    problem: &Problem,
    config: &Config,
) -> Verdict {
    let Some(reason) = retry_reason(status) else {
        return Verdict::Final;
    };
    let final_problem = match (reason, problem) {
        // Another request holds the key (idem-http's `mismatch_status(409)`): waiting won't
        // change that.
        (Reason::InProgress, problem) => problem_type(problem) == Some(ProblemType::KeyReused),
        // A quota, or a store full, that frees up only after longer than this client waits:
        // retrying sooner cannot succeed. Any other 429 is a rate limit, worth its wait.
        (Reason::RateLimited | Reason::Unavailable(_), problem)
            if matches!(
                problem_type(problem),
                Some(ProblemType::QuotaExceeded | ProblemType::StoreFull)
            ) =>
        {
            retry_after(headers, SystemTime::now()).is_none_or(|wait| wait > config.max_retry_after)
        }
        (Reason::RateLimited, _) => false,
        // A failure that may have taken effect is never retried, nor one that may say so.
        (_, Problem::Read(Some(kind))) => is_not_recorded(kind, config),
        (_, Problem::Unreadable) => true,
        (_, Problem::Read(None) | Problem::None) => false,
    };
    if final_problem {
        return Verdict::Final;
    }
    Verdict::Retry {
        reason,
        retry_after: retry_after(headers, SystemTime::now()),
    }
}

/// Whether `uri` says the request may have taken effect: one of the contract's problem types
/// that says so, or one the caller named.
fn is_not_recorded(uri: &str, config: &Config) -> bool {
    ProblemType::from_uri(uri).is_some_and(ProblemType::may_have_taken_effect)
        || config.not_recorded_types.iter().any(|known| known == uri)
}

/// The wait a `Retry-After` header asks for: delay-seconds, or an HTTP-date (a date already
/// past asks for none).
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if !value.is_empty() && value.bytes().all(|byte| byte.is_ascii_digit()) {
        // Delay-seconds has no bound: past u64, it is simply very long.
        let seconds = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(retry_after: Option<&'static str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) = retry_after {
            headers.insert(RETRY_AFTER, HeaderValue::from_static(value));
        }
        headers
    }

    fn verdict(status: u16, retry_after: Option<&'static str>, kind: Option<&str>) -> Verdict {
        let status = StatusCode::from_u16(status).unwrap();
        let problem = match kind {
            Some(kind) => Problem::Read(Some(kind.to_owned())),
            None => Problem::None,
        };
        on_response(status, &headers(retry_after), &problem, &Config::default())
    }

    fn retried(reason: Reason, retry_after: Option<u64>) -> Verdict {
        Verdict::Retry {
            reason,
            retry_after: retry_after.map(Duration::from_secs),
        }
    }

    #[test]
    fn the_table() {
        assert_eq!(
            verdict(409, Some("1"), None),
            retried(Reason::InProgress, Some(1))
        );
        assert_eq!(verdict(409, None, None), retried(Reason::InProgress, None));
        assert_eq!(
            verdict(429, Some("7"), None),
            retried(Reason::RateLimited, Some(7))
        );
        for status in [502, 503, 504] {
            let unavailable = Reason::Unavailable(StatusCode::from_u16(status).unwrap());
            assert_eq!(verdict(status, None, None), retried(unavailable, None));
        }
        assert_eq!(verdict(500, None, None), retried(Reason::ServerError, None));
        for status in [
            200, 201, 204, 301, 304, 400, 401, 403, 404, 408, 410, 412, 413, 422,
        ] {
            assert_eq!(verdict(status, None, None), Verdict::Final, "{status}");
        }
        for status in [501, 505, 507, 511] {
            assert_eq!(verdict(status, None, None), Verdict::Final, "{status}");
        }
    }

    #[test]
    fn a_not_recorded_problem_is_final() {
        assert_eq!(
            verdict(500, None, Some(crate::config::IDEM_HTTP_NOT_RECORDED)),
            Verdict::Final
        );
        assert_eq!(
            verdict(500, None, Some("https://example.com/other")),
            retried(Reason::ServerError, None)
        );
        let config = crate::IdempotentRetry::builder()
            .not_recorded_problem_type("https://example.com/unknown-outcome")
            .build();
        let own = on_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &HeaderMap::new(),
            &Problem::Read(Some("https://example.com/unknown-outcome".to_owned())),
            &config.config,
        );
        assert_eq!(own, Verdict::Final);
    }

    #[test]
    fn idem_http_problems_are_known_in_every_version() {
        let later = ProblemType::NotRecorded.uri().replace("/0.1/", "/0.7/");
        assert_eq!(verdict(500, None, Some(&later)), Verdict::Final);
        let lookalike = later.trim_end_matches('l');
        assert_ne!(verdict(500, None, Some(lookalike)), Verdict::Final);
        let reused = ProblemType::KeyReused.uri();
        assert_eq!(verdict(409, None, Some(reused)), Verdict::Final);
        let in_progress = ProblemType::InProgress.uri();
        assert_eq!(
            verdict(409, Some("1"), Some(in_progress)),
            retried(Reason::InProgress, Some(1))
        );
    }

    #[test]
    fn a_store_full_until_later_than_the_client_waits_is_final() {
        let full = ProblemType::StoreFull.uri();
        assert_eq!(verdict(503, Some("86400"), Some(full)), Verdict::Final);
        assert_eq!(verdict(503, None, Some(full)), Verdict::Final);
        assert_eq!(
            verdict(503, Some("3"), Some(full)),
            retried(
                Reason::Unavailable(StatusCode::SERVICE_UNAVAILABLE),
                Some(3)
            )
        );
        let unavailable = ProblemType::StoreUnavailable.uri();
        assert_eq!(
            verdict(503, None, Some(unavailable)),
            retried(Reason::Unavailable(StatusCode::SERVICE_UNAVAILABLE), None)
        );
    }

    #[test]
    fn a_quota_that_frees_up_later_than_the_client_waits_is_final() {
        let quota = ProblemType::QuotaExceeded.uri();
        assert_eq!(verdict(429, Some("86400"), Some(quota)), Verdict::Final);
        assert_eq!(verdict(429, None, Some(quota)), Verdict::Final);
        assert_eq!(
            verdict(429, Some("3"), Some(quota)),
            retried(Reason::RateLimited, Some(3))
        );
        let unreadable = on_response(
            StatusCode::TOO_MANY_REQUESTS,
            &headers(Some("86400")),
            &Problem::Unreadable,
            &Config::default(),
        );
        assert_eq!(
            unreadable,
            retried(Reason::RateLimited, Some(86400)),
            "another 429 is a rate limit"
        );
    }

    #[test]
    fn an_unreadable_problem_is_final_unless_in_progress() {
        let judged = |status| {
            let status = StatusCode::from_u16(status).unwrap();
            on_response(
                status,
                &HeaderMap::new(),
                &Problem::Unreadable,
                &Config::default(),
            )
        };
        assert_eq!(judged(500), Verdict::Final);
        assert_eq!(judged(503), Verdict::Final);
        assert_eq!(judged(409), retried(Reason::InProgress, None));
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        let read = |value: &'static str| retry_after(&headers(Some(value)), now);
        assert_eq!(read("120"), Some(Duration::from_secs(120)));
        assert_eq!(read(" 3 "), Some(Duration::from_secs(3)));
        // 784111777 is Sun, 06 Nov 1994 08:49:37 GMT.
        assert_eq!(
            read("Sun, 06 Nov 1994 08:49:47 GMT"),
            Some(Duration::from_secs(10))
        );
        assert_eq!(read("Sun, 06 Nov 1994 08:00:00 GMT"), Some(Duration::ZERO));
        assert_eq!(
            read("99999999999999999999999"),
            Some(Duration::from_secs(u64::MAX))
        );
        assert_eq!(read("-1"), None);
        assert_eq!(read("soon"), None);
        assert_eq!(retry_after(&headers(None), now), None);
    }
}
