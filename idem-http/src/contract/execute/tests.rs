//! The tower layer in-process: a retry that sends the stored request's very bytes replays
//! without reading its body as JSON; any other is compared by its fingerprint, as before, and
//! so is a retry of a record stored in the JSON form.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use idem_conformance::{Intercepted, Interceptor};
use idem_core::store::{Completed, Outcome, OwnerToken, Store};
use idem_core::{Idempotency, Key, StoreError};
use idem_protocol::header::{IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED};
use idem_stores::memory::MemoryStore;
use tower::ServiceExt;
use tower_layer::Layer;

use crate::request::fingerprint::parses;
use crate::response::stored::StoredResponse;
use crate::IdempotencyLayer;

const JSON: &str = "application/json";

/// The layer over a handler that counts its runs, on `store`.
struct Shop {
    layer: IdempotencyLayer,
    runs: Arc<AtomicUsize>,
}

impl Shop {
    fn on(store: impl Store + 'static) -> Self {
        Shop {
            layer: IdempotencyLayer::new(Idempotency::new(store)),
            runs: Arc::default(),
        }
    }

    /// A keyed POST of `body` as `content_type`: its status, whether it was a replay, and how
    /// many bodies were read as JSON meanwhile.
    async fn send(&self, content_type: &str, body: &'static str) -> (StatusCode, bool, usize) {
        let runs = self.runs.clone();
        let handler = tower::service_fn(move |_: Request<crate::body::Body>| {
            runs.fetch_add(1, Ordering::SeqCst);
            let made = Response::builder()
                .status(StatusCode::CREATED)
                .body(Full::new(Bytes::from_static(b"made")))
                .unwrap();
            async move { Ok::<_, Infallible>(made) }
        });
        let request = Request::post("/payments")
            .header(IDEMPOTENCY_KEY, "pay-1")
            .header("authorization", "Bearer shop-client")
            .header("content-type", content_type)
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap();
        let before = parses::so_far();
        let response = self.layer.layer(handler).oneshot(request).await.unwrap();
        let replayed = response.headers().get(IDEMPOTENT_REPLAYED).is_some();
        (response.status(), replayed, parses::so_far() - before)
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

#[tokio::test]
async fn the_same_bytes_replay_without_reading_the_body_as_json() {
    let shop = Shop::on(MemoryStore::new());
    let (status, replayed, parsed) = shop.send(JSON, r#"{"amount":10,"to":"ann"}"#).await;
    assert_eq!((status, replayed), (StatusCode::CREATED, false));
    assert_eq!(parsed, 1, "a first request computes its fingerprint");
    for _ in 0..2 {
        let retry = shop.send(JSON, r#"{"amount":10,"to":"ann"}"#).await;
        assert_eq!(retry, (StatusCode::CREATED, true, 0));
    }
    assert_eq!(shop.runs(), 1);
}

#[tokio::test]
async fn other_bytes_are_compared_by_their_fingerprint() {
    let shop = Shop::on(MemoryStore::new());
    shop.send(JSON, r#"{"amount":10,"to":"ann"}"#).await;
    let reordered = shop.send(JSON, r#"{ "to": "ann", "amount": 10 }"#).await;
    assert_eq!(reordered, (StatusCode::CREATED, true, 1));
    let charset = shop
        .send(
            "application/json; charset=utf-8",
            r#"{"amount":10,"to":"ann"}"#,
        )
        .await;
    assert_eq!(
        charset,
        (StatusCode::CREATED, true, 1),
        "another content type is another request as sent, the same one by value"
    );
    let other = shop.send(JSON, r#"{"amount":99,"to":"ann"}"#).await;
    assert_eq!(other, (StatusCode::UNPROCESSABLE_ENTITY, false, 1));
    let as_text = shop.send("text/plain", r#"{"amount":10,"to":"ann"}"#).await;
    assert_eq!(
        as_text,
        (StatusCode::UNPROCESSABLE_ENTITY, false, 0),
        "the same bytes as text are not the JSON request"
    );
    assert_eq!(shop.runs(), 1);
}

/// A memory store that keeps every stored response in the JSON form, as before the frame.
struct JsonForm(MemoryStore);

#[async_trait::async_trait]
impl Interceptor for JsonForm {
    fn inner(&self) -> &dyn Store {
        &self.0
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        let Outcome::Ok(frame) = record.outcome() else {
            return self.0.complete(key, owner, record).await;
        };
        let response = StoredResponse::from_outcome(frame.clone()).unwrap();
        let json = Outcome::ok(serde_json::to_vec(&response).unwrap());
        let old_form = Completed::new(*record.fingerprint(), json, record.expires_at());
        self.0.complete(key, owner, &old_form).await
    }
}

#[tokio::test]
async fn a_record_stored_in_the_json_form_replays_by_fingerprint() {
    let shop = Shop::on(Intercepted(JsonForm(MemoryStore::new())));
    shop.send(JSON, r#"{"amount":10}"#).await;
    let retry = shop.send(JSON, r#"{"amount":10}"#).await;
    assert_eq!(retry, (StatusCode::CREATED, true, 1), "no digest to match");
    let other = shop.send(JSON, r#"{"amount":11}"#).await;
    assert_eq!(other.0, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(shop.runs(), 1);
}

/// A memory store whose lookup panics.
struct PanickingLookup(MemoryStore);

#[async_trait::async_trait]
impl Interceptor for PanickingLookup {
    fn inner(&self) -> &dyn Store {
        &self.0
    }

    fn lookup(
        &self,
        _: &Key,
        _: &idem_core::store::Probe,
    ) -> Result<idem_core::store::Lookup, StoreError> {
        panic!("the lookup broke")
    }

    fn looks_up(&self) -> bool {
        true
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_panic_before_the_key_is_claimed_is_a_500_and_holds_nothing() {
    let store = Arc::new(Intercepted(PanickingLookup(MemoryStore::new())));
    let shop = Shop {
        layer: IdempotencyLayer::new(Idempotency::from_arc(store.clone())),
        runs: Arc::default(),
    };
    let (status, replayed, _) = shop.send(JSON, r#"{"amount":1}"#).await;
    assert_eq!(
        (status, replayed, shop.runs()),
        (StatusCode::INTERNAL_SERVER_ERROR, false, 0)
    );
    assert_eq!(store.0 .0.len(), 0, "nothing was reserved");
}
