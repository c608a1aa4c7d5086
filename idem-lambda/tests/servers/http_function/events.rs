//! The events API Gateway sends a function: a REST API's (payload 1.0) with a Lambda
//! authorizer's `principalId`, an HTTP API's (payload 2.0) with a JWT authorizer's claims,
//! each carrying an `Idempotency-Key` header and a JSON body.

use serde_json::{json, Value};

/// A REST API event: `POST /orders` with `body`, keyed by `key`, whose Lambda authorizer
/// named `principal_id` (none when `None`).
pub fn rest_api(key: &str, body: &Value, principal_id: Option<&str>) -> Value {
    let mut context = json!({
        "accountId": "123456789012",
        "resourceId": "r1",
        "stage": "prod",
        "requestId": request_id(),
        "identity": {"sourceIp": "127.0.0.1"},
        "resourcePath": "/orders",
        "httpMethod": "POST",
        "apiId": "api1",
    });
    if let Some(principal_id) = principal_id {
        context["authorizer"] = json!({"principalId": principal_id, "integrationLatency": 0});
    }
    json!({
        "resource": "/orders",
        "path": "/orders",
        "httpMethod": "POST",
        "headers": {
            "content-type": "application/json",
            "host": "api1.execute-api.eu-west-1.amazonaws.com",
            "idempotency-key": key,
        },
        "requestContext": context,
        "body": body.to_string(),
        "isBase64Encoded": false,
    })
}

/// An HTTP API event: `POST /orders` with `body`, keyed by `key`, whose JWT authorizer
/// passed a token of subject `sub` (no authorizer when `None`).
pub fn http_api(key: &str, body: &Value, sub: Option<&str>) -> Value {
    let mut context = json!({
        "accountId": "123456789012",
        "apiId": "api2",
        "domainName": "api2.execute-api.eu-west-1.amazonaws.com",
        "domainPrefix": "api2",
        "http": {
            "method": "POST",
            "path": "/orders",
            "protocol": "HTTP/1.1",
            "sourceIp": "127.0.0.1",
            "userAgent": "test",
        },
        "requestId": request_id(),
        "routeKey": "POST /orders",
        "stage": "$default",
        "time": "07/Dec/2026:05:00:00 +0000",
        "timeEpoch": 1_796_619_600_000_u64,
    });
    if let Some(sub) = sub {
        context["authorizer"] = json!({
            "jwt": {"claims": {"sub": sub, "iss": "https://issuer.example"}, "scopes": null},
        });
    }
    json!({
        "version": "2.0",
        "routeKey": "POST /orders",
        "rawPath": "/orders",
        "rawQueryString": "",
        "headers": {
            "content-type": "application/json",
            "host": "api2.execute-api.eu-west-1.amazonaws.com",
            "idempotency-key": key,
        },
        "requestContext": context,
        "body": body.to_string(),
        "isBase64Encoded": false,
    })
}

/// A fresh request id: API Gateway gives every delivery its own.
fn request_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "req-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
