//! Every part of a request the fingerprint reads changes its raw digest, and requests that
//! differ only in what the fingerprint reads by value (JSON key order) have other digests but
//! one fingerprint.

use http::HeaderName;

use super::raw_digest;
use crate::request::fingerprint::of_request;

/// A request's head and body.
struct Sent {
    method: &'static str,
    uri: &'static str,
    headers: Vec<(&'static str, &'static str)>,
    body: &'static str,
}

const TENANT: HeaderName = HeaderName::from_static("x-tenant");

fn base() -> Sent {
    Sent {
        method: "POST",
        uri: "/payments?a=1&b=2",
        headers: vec![
            ("content-type", "application/json"),
            ("x-tenant", "acme"),
            ("x-tenant", "beta"),
        ],
        body: r#"{"amount":10,"currency":"eur"}"#,
    }
}

fn parts(sent: &Sent) -> http::request::Parts {
    let mut builder = http::Request::builder().method(sent.method).uri(sent.uri);
    for (name, value) in &sent.headers {
        builder = builder.header(*name, *value);
    }
    builder.body(()).unwrap().into_parts().0
}

/// The raw digest and the fingerprint of `sent`, `x-tenant` listed for both.
fn digests(sent: &Sent) -> (idem_core::Fingerprint, idem_core::Fingerprint) {
    let parts = parts(sent);
    let listed = [TENANT];
    let raw = raw_digest(&parts, sent.body.as_bytes(), &listed).unwrap();
    let canonical = of_request(
        &parts.method,
        &parts.uri,
        &parts.headers,
        sent.body.as_bytes(),
        &listed,
    )
    .unwrap();
    (raw, canonical)
}

#[test]
fn the_same_request_has_the_same_digest() {
    assert_eq!(digests(&base()), digests(&base()));
}

#[test]
fn each_part_of_the_request_changes_its_digest() {
    let (raw, _) = digests(&base());
    let changed = [
        (
            "method",
            Sent {
                method: "PUT",
                ..base()
            },
        ),
        (
            "path",
            Sent {
                uri: "/refunds?a=1&b=2",
                ..base()
            },
        ),
        (
            "query",
            Sent {
                uri: "/payments?a=1&b=3",
                ..base()
            },
        ),
        (
            "query's order",
            Sent {
                uri: "/payments?b=2&a=1",
                ..base()
            },
        ),
        (
            "no query",
            Sent {
                uri: "/payments",
                ..base()
            },
        ),
        (
            "body",
            Sent {
                body: r#"{"amount":11,"currency":"eur"}"#,
                ..base()
            },
        ),
        (
            "body's spacing",
            Sent {
                body: r#"{"amount": 10,"currency":"eur"}"#,
                ..base()
            },
        ),
        (
            "content type",
            Sent {
                headers: vec![
                    ("content-type", "text/plain"),
                    ("x-tenant", "acme"),
                    ("x-tenant", "beta"),
                ],
                ..base()
            },
        ),
        (
            "a second content type",
            Sent {
                headers: vec![
                    ("content-type", "application/json"),
                    ("content-type", "text/plain"),
                    ("x-tenant", "acme"),
                    ("x-tenant", "beta"),
                ],
                ..base()
            },
        ),
        (
            "a listed header's value",
            Sent {
                headers: vec![
                    ("content-type", "application/json"),
                    ("x-tenant", "acme"),
                    ("x-tenant", "gamma"),
                ],
                ..base()
            },
        ),
        (
            "a listed header's values' order",
            Sent {
                headers: vec![
                    ("content-type", "application/json"),
                    ("x-tenant", "beta"),
                    ("x-tenant", "acme"),
                ],
                ..base()
            },
        ),
        (
            "a listed header missing",
            Sent {
                headers: vec![("content-type", "application/json")],
                ..base()
            },
        ),
    ];
    for (what, sent) in changed {
        assert_ne!(digests(&sent).0, raw, "{what} changes the raw digest");
    }
    let unlisted = Sent {
        headers: [base().headers, vec![("x-trace", "1")]].concat(),
        ..base()
    };
    assert_eq!(digests(&unlisted).0, raw, "a header not listed is not read");
}

#[test]
fn json_keys_in_another_order_change_the_digest_but_not_the_fingerprint() {
    let (raw, canonical) = digests(&base());
    let reordered = Sent {
        body: r#"{"currency":"eur","amount":10}"#,
        ..base()
    };
    let (reordered_raw, reordered_canonical) = digests(&reordered);
    assert_ne!(reordered_raw, raw);
    assert_eq!(reordered_canonical, canonical);
}

#[test]
fn the_digest_is_not_the_fingerprint_of_the_same_bytes() {
    let plain = Sent {
        headers: vec![],
        ..base()
    };
    let (raw, canonical) = digests(&plain);
    assert_ne!(raw, canonical, "a domain of its own");
}
