//! What a stored response may put on the wire when it is replayed, checked again on every
//! replay: a record is data from a store, and a store can be written by others.

use http::{HeaderName, HeaderValue, StatusCode};

/// Headers that frame a message or belong to one connection: never stored, never replayed,
/// whatever the allow-list says. The replay's own length and framing are the server's.
const FRAMING: [&str; 9] = [
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "upgrade",
    "te",
    "trailer",
    "proxy-authenticate",
];

/// Headers that belong to one client or one moment: never stored, never replayed, whatever the
/// allow-list says. A cookie set for the first caller is not the retry's (under a shared scope
/// it would be another client's session), and a replay's `Date` is the server's own.
const PERSONAL: [&str; 3] = ["set-cookie", "set-cookie2", "date"];

/// The limits of a replay: the headers it may carry and the size of its body.
pub(crate) struct ReplayLimits<'a> {
    /// The response headers the layer replays.
    pub(crate) headers: &'a [HeaderName],
    /// The largest body the layer stores, in bytes.
    pub(crate) max_body: usize,
}

impl ReplayLimits<'_> {
    /// Whether a stored header named `name` is replayed: it is on the allow-list, and it is
    /// not one that is never replayed.
    fn header_replayed(&self, name: &HeaderName) -> bool {
        !never_replayed(name.as_str()) && self.headers.contains(name)
    }

    /// The stored `(name, value)` pairs that are replayed, in order: checked when they were
    /// read, they are filtered here, not parsed again.
    pub(crate) fn replayed_headers(
        &self,
        stored: Vec<(HeaderName, HeaderValue)>,
    ) -> Vec<(HeaderName, HeaderValue)> {
        stored
            .into_iter()
            .filter(|(name, _)| self.header_replayed(name))
            .collect()
    }

    /// The stored status, when a layer could have stored it: a final status, 200 to 599.
    pub(crate) fn status(&self, stored: u16) -> Result<StatusCode, String> {
        match StatusCode::from_u16(stored) {
            Ok(status) if (200..=599).contains(&stored) => Ok(status),
            _ => Err(format!(
                "stored status {stored} is not one a response is stored with"
            )),
        }
    }

    /// Refuses content on a response whose status forbids it (RFC 9110 sections 6.4.1 and
    /// 15.4.5): a 204, 205 or 304 carries no body and no trailers, and so no length either.
    pub(crate) fn content_allowed(
        &self,
        status: StatusCode,
        body_len: usize,
        trailers: usize,
    ) -> Result<(), String> {
        if has_no_content(status) && (body_len > 0 || trailers > 0) {
            return Err(format!(
                "the stored {status} response has {body_len} bytes of body and {trailers} \
                 trailers, and a {} response carries none",
                status.as_u16()
            ));
        }
        Ok(())
    }

    /// Refuses a body of `len` bytes (at least) over the limit, before it is decoded.
    pub(crate) fn body_len(&self, len: usize) -> Result<(), String> {
        if len > self.max_body {
            return Err(format!(
                "the stored body is {len} bytes, over the {} the layer stores",
                self.max_body
            ));
        }
        Ok(())
    }
}

/// Whether a response with `status` never carries content (RFC 9110 section 6.4.1): the
/// informational ones, 204 No Content, 205 Reset Content and 304 Not Modified.
pub(crate) fn has_no_content(status: StatusCode) -> bool {
    status.is_informational() || matches!(status.as_u16(), 204 | 205 | 304)
}

/// Whether `name` is never stored nor replayed: it frames a message, belongs to one connection,
/// or belongs to one client or moment (`Set-Cookie`, `Date`).
pub(crate) fn never_replayed(name: &str) -> bool {
    FRAMING
        .iter()
        .chain(PERSONAL.iter())
        .any(|never| name.eq_ignore_ascii_case(never))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(headers: &[HeaderName]) -> ReplayLimits<'_> {
        ReplayLimits {
            headers,
            max_body: 10,
        }
    }

    #[test]
    fn only_allowed_headers_that_do_not_frame_are_replayed() {
        let allowed = [
            HeaderName::from_static("location"),
            HeaderName::from_static("content-length"),
        ];
        let limits = limits(&allowed);
        let replayed = |name| limits.header_replayed(&HeaderName::from_static(name));
        assert!(replayed("location"));
        assert!(!replayed("content-length"), "framing, though allowed");
        assert!(!replayed("set-cookie"));
        assert!(!replayed("access-control-allow-origin"));
    }

    #[test]
    fn cookies_and_dates_are_never_replayed_even_when_allowed() {
        let allowed = [
            HeaderName::from_static("set-cookie"),
            HeaderName::from_static("date"),
            HeaderName::from_static("set-cookie2"),
        ];
        let limits = limits(&allowed);
        for name in ["set-cookie", "Set-Cookie", "date", "set-cookie2"] {
            let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
            assert!(!limits.header_replayed(&name), "{name}");
        }
    }

    #[test]
    fn only_final_statuses_are_replayed() {
        let limits = limits(&[]);
        for status in [200, 201, 404, 500, 599] {
            assert!(limits.status(status).is_ok(), "{status}");
        }
        for status in [0, 100, 101, 199, 600, 999, 1000] {
            assert!(limits.status(status).is_err(), "{status}");
        }
    }

    #[test]
    fn no_content_statuses_carry_no_body_and_no_trailers() {
        let limits = limits(&[]);
        for status in [204, 205, 304] {
            let status = StatusCode::from_u16(status).unwrap();
            assert!(limits.content_allowed(status, 0, 0).is_ok(), "{status}");
            assert!(limits.content_allowed(status, 82, 0).is_err(), "{status}");
            assert!(limits.content_allowed(status, 0, 1).is_err(), "{status}");
        }
        for status in [200, 201, 206, 404] {
            let status = StatusCode::from_u16(status).unwrap();
            assert!(limits.content_allowed(status, 82, 1).is_ok(), "{status}");
        }
        assert!(has_no_content(StatusCode::CONTINUE));
    }

    #[test]
    fn bodies_over_the_limit_are_refused() {
        let limits = limits(&[]);
        assert!(limits.body_len(10).is_ok());
        assert!(limits.body_len(11).unwrap_err().contains("11 bytes"));
    }
}
