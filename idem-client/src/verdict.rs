//! The retry table: which outcomes of an attempt are worth another attempt with the same key.

use std::fmt;
use std::time::{Duration, SystemTime};

use http::header::RETRY_AFTER;
use http::{HeaderMap, StatusCode};

use crate::config::Config;

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
    /// No answer: the connection failed or timed out, and the answer may have been lost.
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
    let lost = error.is_connect() || error.is_timeout() || error.is_request();
    if lost && !error.is_builder() {
        Verdict::Retry {
            reason: Reason::NoAnswer,
            retry_after: None,
        }
    } else {
        Verdict::Final
    }
}

/// The verdict on a response with `status` and `headers`, whose `application/problem+json`
/// type (when it has one and it was read) is `problem_type`.
pub(crate) fn on_response(
    status: StatusCode,
    headers: &HeaderMap,
    problem_type: Option<&str>,
    config: &Config,
) -> Verdict {
    let reason = match status.as_u16() {
        409 => Reason::InProgress,
        429 => Reason::RateLimited,
        502..=504 => Reason::Unavailable(status),
        500 => Reason::ServerError,
        _ => return Verdict::Final,
    };
    if problem_type.is_some_and(|kind| is_not_recorded(kind, config)) {
        return Verdict::Final;
    }
    Verdict::Retry {
        reason,
        retry_after: retry_after(headers, SystemTime::now()),
    }
}

/// Whether a response with `status` may carry a "not recorded" problem type worth reading.
pub(crate) fn may_be_not_recorded(status: StatusCode) -> bool {
    status.is_server_error()
}

fn is_not_recorded(problem_type: &str, config: &Config) -> bool {
    config
        .not_recorded_types
        .iter()
        .any(|known| known == problem_type)
}

/// The wait a `Retry-After` header asks for: delay-seconds, or an HTTP-date (a date already
/// past asks for none).
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
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
        on_response(status, &headers(retry_after), kind, &Config::default())
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
            Some("https://example.com/unknown-outcome"),
            &config.config,
        );
        assert_eq!(own, Verdict::Final);
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
        assert_eq!(read("-1"), None);
        assert_eq!(read("soon"), None);
        assert_eq!(retry_after(&headers(None), now), None);
    }
}
