//! `idem_core::step` inside a handler behind the layer: a checkout whose ledger fails after the
//! card was charged keeps its key for the same request, which resumes after the charge.

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use idem_http::{problem, IdempotencyLayer};
use support::{memory, send, serve};

/// The card gateway and the ledger, counted, and whether the ledger is down.
#[derive(Default)]
struct Shop {
    charges: AtomicUsize,
    bookings: AtomicUsize,
    ledger_down: AtomicBool,
}

enum ShopError {
    LedgerDown,
    Idempotency(idem_core::Error),
}

impl From<idem_core::Error> for ShopError {
    fn from(error: idem_core::Error) -> Self {
        ShopError::Idempotency(error)
    }
}

impl IntoResponse for ShopError {
    fn into_response(self) -> Response {
        match self {
            ShopError::LedgerDown => StatusCode::BAD_GATEWAY.into_response(),
            ShopError::Idempotency(error) => StatusCode::from_u16(error.http_status())
                .unwrap()
                .into_response(),
        }
    }
}

async fn checkout(State(shop): State<Arc<Shop>>) -> Result<(StatusCode, String), ShopError> {
    let charge = idem_core::step("charge", async {
        let n = shop.charges.fetch_add(1, Ordering::SeqCst) + 1;
        Ok::<_, ShopError>(format!("ch_{n}"))
    })
    .await?;
    let entry = idem_core::step("ledger", async {
        if shop.ledger_down.load(Ordering::SeqCst) {
            return Err(ShopError::LedgerDown);
        }
        Ok(shop.bookings.fetch_add(1, Ordering::SeqCst) + 1)
    })
    .await?;
    Ok((StatusCode::CREATED, format!("{charge} booked as {entry}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_after_a_step_resumes_on_the_same_request_only() {
    let shop = Arc::new(Shop::default());
    let app = Router::new()
        .route("/checkout", post(checkout))
        .with_state(shop.clone())
        .layer(IdempotencyLayer::new(memory()));
    let server = serve(app).await;
    let order = r#"{"order":"o-1","amount":4200}"#;

    shop.ledger_down.store(true, Ordering::SeqCst);
    let failed = send(server.post("/checkout", Some("co-1"), order)).await;
    assert_eq!(failed.status, 502, "the ledger's failure is passed on");
    assert_eq!(shop.charges.load(Ordering::SeqCst), 1);

    let other = send(server.post("/checkout", Some("co-1"), r#"{"order":"o-2"}"#)).await;
    other.assert_problem(422, problem::KEY_REUSED, Some("co-1"));

    shop.ledger_down.store(false, Ordering::SeqCst);
    let resumed = send(server.post("/checkout", Some("co-1"), order)).await;
    assert_eq!(resumed.status, 201, "{:?}", resumed.body);
    assert_eq!(
        &resumed.body[..],
        b"ch_1 booked as 1",
        "the charge comes from the record"
    );
    assert!(!resumed.replayed());
    assert_eq!(
        shop.charges.load(Ordering::SeqCst),
        1,
        "the card was charged again"
    );

    let replayed = send(server.post("/checkout", Some("co-1"), order)).await;
    assert!(replayed.replayed());
    assert_eq!(replayed.body, resumed.body);
    assert_eq!(shop.bookings.load(Ordering::SeqCst), 1);
}
