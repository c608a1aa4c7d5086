//! The routers compared: one axum app, one no-work handler, behind each layer.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use axum_idempotent::{IdempotentLayer, IdempotentOptions};
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use ruts::store::moka::MokaStore;
use ruts::store::Ttl;
use ruts::{CookieOptions, Session, SessionLayer};
use tokio::net::TcpListener;
use tower_cookies::CookieManagerLayer;

/// Where the payments route is; the session route is beside it.
pub const PAYMENTS: &str = "/payments";
/// Where a client starts the session `axum-idempotent` keeps its responses in.
pub const SESSION: &str = "/session";

/// How long either layer keeps a response, in seconds.
const KEPT_SECS: u64 = 3600;

/// The handler every router runs: no work, a small JSON answer.
async fn create_payment(body: String) -> (StatusCode, String) {
    (
        StatusCode::CREATED,
        format!(r#"{{"id":"ch_1","request":{body}}}"#),
    )
}

/// The app without any layer.
pub fn plain() -> Router {
    Router::new().route(PAYMENTS, post(create_payment))
}

/// The app behind idem-http on `idem`'s store.
pub fn idem_http(idem: Idempotency) -> Router {
    plain().layer(IdempotencyLayer::new(idem))
}

/// The app behind `axum-idempotent` on its in-memory (moka) session store, keyed by the
/// `Idempotency-Key` header, laid out as its documentation says: the cookie manager, then the
/// session layer, then the idempotency layer. It caches only for a request whose session
/// exists, which a client opens at [`SESSION`].
pub fn axum_idempotent() -> Router {
    let store = Arc::new(MokaStore::builder().build());
    let options = IdempotentOptions::default()
        .use_idempotency_key_header(Some("idempotency-key"), false)
        .expire_after(KEPT_SECS as i64);
    Router::new()
        .route(PAYMENTS, post(create_payment))
        .route(SESSION, post(open_session))
        .layer(IdempotentLayer::<MokaStore>::new(options))
        .layer(
            SessionLayer::new(store).with_cookie_options(
                CookieOptions::build()
                    .name("session")
                    .max_age(KEPT_SECS)
                    .path("/"),
            ),
        )
        .layer(CookieManagerLayer::new())
}

async fn open_session(session: Session<MokaStore>) -> StatusCode {
    let ttl = Ttl::new(KEPT_SECS as i64).expect("an hour is a valid TTL");
    match session.set("client", &true, ttl, None).await {
        Ok(()) => StatusCode::NO_CONTENT,
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// Serves `router` on a free loopback port of the current runtime; its address.
pub async fn serve(router: Router) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free loopback port");
    let address = listener.local_addr().expect("a bound listener's address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    address
}
