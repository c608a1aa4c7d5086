//! Scoping keys by the principal an authentication layer sets, rather than by the raw token.

use crate::support;

use std::sync::Arc;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use idem_http::{problem, IdempotencyLayer, Unscoped};
use support::{app, memory, routes, send, serve, Payments};

/// The user an authentication layer found behind the request's token.
#[derive(Clone)]
struct UserId(&'static str);

impl std::fmt::Display for UserId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "user:{}", self.0)
    }
}

/// Every token of Alice's (she refreshes it) and of Bob's; anything else is refused.
async fn authenticate(mut request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let user = match token {
        "Bearer alice-token-1" | "Bearer alice-token-2" => UserId("alice"),
        "Bearer bob-token" => UserId("bob"),
        _ => return StatusCode::UNAUTHORIZED.into_response(),
    };
    request.extensions_mut().insert(user);
    next.run(request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refreshed_token_keeps_its_principal_s_records() {
    let payments = Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(memory())
        .scope_from_extension::<UserId>()
        .build();
    // The authentication layer is added last, so it runs first.
    let router = app(layer, payments.clone()).layer(middleware::from_fn(authenticate));
    let server = serve(router).await;
    let with_token = |token: &str| {
        server
            .post("/payments", Some("pay-1"), "{}")
            .header("authorization", format!("Bearer {token}"))
    };

    let first = send(with_token("alice-token-1")).await;
    assert_eq!(first.status, 201);
    let refreshed = send(with_token("alice-token-2")).await;
    assert!(refreshed.replayed(), "the same user, with a new token");
    assert_eq!(refreshed.body, first.body);
    assert!(!send(with_token("bob-token")).await.replayed());
    assert_eq!(payments.runs(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_the_principal_is_refused_rather_than_unscoped() {
    let payments = Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(memory())
        .scope_from_extension::<UserId>()
        .build();
    // Misordered: added last, the idempotency layer runs before authentication sets the user.
    let misordered = routes(payments.clone())
        .layer(middleware::from_fn(authenticate))
        .layer(layer);
    let server = serve(misordered).await;

    let answer = send(
        server
            .post("/payments", Some("pay-1"), "{}")
            .header("authorization", "Bearer alice-token-1"),
    )
    .await;
    answer.assert_problem(500, problem::SCOPE_MISSING, Some("pay-1"));
    let detail = answer.json()["detail"].as_str().unwrap().to_owned();
    assert!(detail.contains("UserId"), "{detail}");
    assert_eq!(payments.runs(), 0);
}

/// A memory store that notes every key reserved in it.
#[derive(Default)]
struct Noting {
    memory: idem_stores::memory::MemoryStore,
    reserved: std::sync::Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl idem_conformance::Interceptor for Noting {
    fn inner(&self) -> &dyn idem_core::store::Store {
        &self.memory
    }

    async fn before(
        &self,
        operation: idem_conformance::Operation,
        key: &idem_core::Key,
    ) -> Result<(), idem_core::StoreError> {
        if operation == idem_conformance::Operation::Reserve {
            self.reserved.lock().unwrap().push(key.as_str().to_owned());
        }
        Ok(())
    }
}

/// The key reserved for one request with `authorization`, through a layer with `secret`.
async fn stored_key(authorization: &str, secret: Option<&str>) -> String {
    let store = Arc::new(idem_conformance::Intercepted(Noting::default()));
    let builder = IdempotencyLayer::builder(idem_core::Idempotency::from_arc(store.clone()));
    let layer = match secret {
        Some(secret) => builder.scope_secret(secret),
        None => builder,
    }
    .build();
    let payments = Arc::new(Payments::default());
    let server = serve(app(layer, payments.clone())).await;
    let request = || {
        server
            .post("/payments", Some("pay-1"), "{}")
            .header("authorization", authorization)
    };
    assert_eq!(send(request()).await.status, 201);
    assert!(send(request()).await.replayed(), "one secret, one scope");
    assert_eq!(payments.runs(), 1);
    let reserved = store.0.reserved.lock().unwrap();
    reserved[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_scope_secret_the_store_never_sees_a_bare_digest_of_the_credentials() {
    // alice:Summer2024!, a password any dictionary holds.
    let authorization = "Basic YWxpY2U6U3VtbWVyMjAyNCE=";
    // What anyone can compute from a guess: `printf 'basic YWxp...' | sha256sum`.
    let crackable = idem_protocol::scope::authorization_scope([authorization.as_bytes()]).unwrap();

    let unkeyed = stored_key(authorization, None).await;
    assert!(unkeyed.contains(&crackable), "{unkeyed}");

    let keyed = stored_key(authorization, Some("a secret of this server, 32 bytes+")).await;
    assert!(!keyed.contains(&crackable), "{keyed}");
    let other_secret = stored_key(authorization, Some("another server's secret, 32 bytes")).await;
    assert_ne!(keyed, other_secret);
}

/// A keyed POST of `{}` to `server` with no `Authorization`, from a client of its own.
fn anonymous(server: &support::Server, key: &str) -> reqwest::RequestBuilder {
    support::anonymous_client()
        .post(format!("{}/payments", server.url))
        .header("idempotency-key", key)
        .header("content-type", "application/json")
        .body("{}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_request_without_a_principal_is_refused_by_default() {
    let payments = Arc::new(Payments::default());
    let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;

    let refused = send(anonymous(&server, "pay-1")).await;

    refused.assert_problem(400, problem::UNSCOPED, Some("pay-1"));
    assert_eq!(payments.runs(), 0);
    let unkeyed = support::anonymous_client()
        .post(format!("{}/payments", server.url))
        .body("{}");
    assert_eq!(send(unkeyed).await.status, 201, "without a key, it passes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unscoped_requests_can_pass_through_or_share_one_key_space() {
    let passed = Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(memory())
        .unscoped(Unscoped::PassedThrough)
        .build();
    let server = serve(app(layer, passed.clone())).await;
    for _ in 0..2 {
        let answer = send(anonymous(&server, "pay-1")).await;
        assert_eq!(answer.status, 201);
        assert!(!answer.replayed());
    }
    assert_eq!(passed.runs(), 2, "passed through: no protection");

    let shared = Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(memory())
        .unscoped(Unscoped::Shared)
        .build();
    let server = serve(app(layer, shared.clone())).await;
    assert!(!send(anonymous(&server, "pay-1")).await.replayed());
    assert!(
        send(anonymous(&server, "pay-1")).await.replayed(),
        "another anonymous client, the same key space"
    );
    assert_eq!(shared.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_scope_that_finds_none_is_refused() {
    let payments = Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(memory())
        .scope(|parts| Some(parts.headers.get("x-api-key")?.to_str().ok()?.to_owned()))
        .build();
    let server = serve(app(layer, payments.clone())).await;

    let refused = send(server.post("/payments", Some("pay-1"), "{}")).await;

    refused.assert_problem(400, problem::UNSCOPED, Some("pay-1"));
    assert_eq!(payments.runs(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_authorization_is_no_scope() {
    let payments = Arc::new(Payments::default());
    let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;

    let refused = send(
        server
            .post("/payments", Some("pay-1"), "{}")
            .header("authorization", ""),
    )
    .await;

    refused.assert_problem(400, problem::UNSCOPED, Some("pay-1"));
    assert_eq!(payments.runs(), 0);
}

/// The docs' own tenant scope, read as the docs read it: a request with an empty header is
/// given `Some("")`.
fn tenant_scoped(payments: Arc<Payments>) -> axum::Router {
    let layer = IdempotencyLayer::builder(memory())
        .scope(|parts| {
            let tenant = parts.headers.get("x-tenant-id")?;
            Some(tenant.to_str().ok()?.to_owned())
        })
        .build();
    app(layer, payments)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_custom_scope_is_no_scope() {
    let payments = Arc::new(Payments::default());
    let server = serve(tenant_scoped(payments.clone())).await;
    let with_tenant = |tenant: &str| {
        server
            .post("/payments", Some("pay-1"), "{}")
            .header("x-tenant-id", tenant)
    };

    let tenant = send(with_tenant("tenant-7")).await;
    assert_eq!(tenant.status, 201);
    for blank in ["", " ", "\t"] {
        let refused = send(with_tenant(blank)).await;
        refused.assert_problem(400, problem::UNSCOPED, Some("pay-1"));
    }
    assert_eq!(payments.runs(), 1, "no blank tenant shares a scope");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_custom_scope_shared_on_purpose_is_the_unscoped_space() {
    let payments = Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(memory())
        .scope(|parts| Some(parts.headers.get("x-tenant-id")?.to_str().ok()?.to_owned()))
        .unscoped(Unscoped::Shared)
        .build();
    let server = serve(app(layer, payments.clone())).await;

    let empty = send(
        server
            .post("/payments", Some("pay-1"), "{}")
            .header("x-tenant-id", ""),
    )
    .await;
    assert_eq!(empty.status, 201);
    let absent = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert!(absent.replayed(), "an empty tenant is no tenant");
    assert_eq!(payments.runs(), 1);
}
