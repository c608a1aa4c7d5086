//! Records written by someone else: a replay puts on the wire only what the layer itself would
//! have stored, whatever the record says.

use crate::support;

use std::sync::Arc;

use idem_conformance::{Intercepted, Interceptor};
use idem_core::store::{Completed, Outcome, OwnerToken, Store};
use idem_core::{Idempotency, Key, StoreError};
use idem_http::{problem, IdempotencyLayer};
use idem_stores::memory::MemoryStore;
use serde_json::{json, Value};
use support::{app, send, serve, Payments, Server};

/// A memory store whose stored responses are rewritten by `craft` on their way in, as by
/// someone with write access to the store.
struct Crafting {
    memory: MemoryStore,
    craft: fn(&mut Value),
}

#[async_trait::async_trait]
impl Interceptor for Crafting {
    fn inner(&self) -> &dyn Store {
        &self.memory
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        let Outcome::Ok(stored) = record.outcome() else {
            return self.memory.complete(key, owner, record).await;
        };
        let mut stored: Value = serde_json::from_slice(stored).unwrap();
        (self.craft)(&mut stored);
        let outcome = Outcome::ok(serde_json::to_vec(&stored).unwrap());
        let crafted = Completed::new(*record.fingerprint(), outcome, record.expires_at());
        self.memory.complete(key, owner, &crafted).await
    }
}

/// A server whose records `craft` rewrites, with its layer as `configure` leaves it.
async fn crafted(
    craft: fn(&mut Value),
    configure: fn(idem_http::IdempotencyLayerBuilder) -> idem_http::IdempotencyLayerBuilder,
) -> (Server, Arc<Payments>) {
    let store = Intercepted(Crafting {
        memory: MemoryStore::new(),
        craft,
    });
    let layer = configure(IdempotencyLayer::builder(Idempotency::new(store))).build();
    let payments = Arc::new(Payments::default());
    (serve(app(layer, payments.clone())).await, payments)
}

#[tokio::test]
async fn a_replay_carries_no_header_off_the_list_and_its_own_length() {
    let (server, payments) = crafted(
        |stored| {
            let headers = stored["headers"].as_array_mut().unwrap();
            for (name, value) in [
                ("set-cookie", "session=stolen"),
                ("access-control-allow-origin", "*"),
                ("content-length", "2"),
                ("connection", "close"),
            ] {
                headers.push(json!([name, value]));
            }
            stored["body"] = json!({ "text": "0123456789" });
        },
        |layer| layer,
    )
    .await;

    let first = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert_eq!(first.status, 201);
    let replay = send(server.post("/payments", Some("pay-1"), "{}")).await;

    assert!(replay.replayed());
    assert_eq!(&replay.body[..], b"0123456789");
    assert_eq!(replay.header("content-length"), Some("10"));
    for name in ["set-cookie", "access-control-allow-origin", "connection"] {
        assert_eq!(replay.header(name), None, "{name}");
    }
    assert_eq!(replay.header("location"), Some("/payments/1"));
    assert_eq!(payments.runs(), 1);
}

#[tokio::test]
async fn a_record_with_a_status_no_response_is_stored_with_is_refused() {
    for status in [101, 999] {
        let (server, payments) = crafted(
            match status {
                101 => |stored: &mut Value| stored["status"] = json!(101),
                _ => |stored: &mut Value| stored["status"] = json!(999),
            },
            |layer| layer,
        )
        .await;

        send(server.post("/payments", Some("pay-1"), "{}")).await;
        let refused = send(server.post("/payments", Some("pay-1"), "{}")).await;

        refused.assert_problem(500, problem::FAILED, Some("pay-1"));
        assert_eq!(payments.runs(), 1, "never a second run");
    }
}

#[tokio::test]
async fn a_stored_body_over_the_limit_is_refused() {
    let (server, payments) = crafted(
        |stored| stored["body"] = json!({ "text": "x".repeat(4096) }),
        |layer| layer.max_response_body(1024),
    )
    .await;

    send(server.post("/payments", Some("pay-1"), "{}")).await;
    let refused = send(server.post("/payments", Some("pay-1"), "{}")).await;

    refused.assert_problem(500, problem::FAILED, Some("pay-1"));
    assert_eq!(payments.runs(), 1);
}

#[tokio::test]
async fn a_no_content_record_with_a_body_is_refused() {
    for status in [204, 205, 304] {
        let (server, payments) = crafted(
            match status {
                204 => |stored: &mut Value| stored["status"] = json!(204),
                205 => |stored: &mut Value| stored["status"] = json!(205),
                _ => |stored: &mut Value| stored["status"] = json!(304),
            },
            |layer| layer,
        )
        .await;

        send(server.post("/payments", Some("pay-1"), "{}")).await;
        let refused = send(server.post("/payments", Some("pay-1"), "{}")).await;

        refused.assert_problem(500, problem::FAILED, Some("pay-1"));
        assert_eq!(payments.runs(), 1, "{status}: never a second run");
    }
}

#[tokio::test]
async fn a_no_content_replay_carries_no_body_and_no_length() {
    for status in [204, 304] {
        let (server, payments) = crafted(
            match status {
                204 => |stored: &mut Value| {
                    stored["status"] = json!(204);
                    stored["body"] = json!({ "text": "" });
                },
                _ => |stored: &mut Value| {
                    stored["status"] = json!(304);
                    stored["body"] = json!({ "text": "" });
                },
            },
            |layer| layer,
        )
        .await;

        send(server.post("/payments", Some("pay-1"), "{}")).await;
        let replay = send(server.post("/payments", Some("pay-1"), "{}")).await;

        assert!(replay.replayed(), "{status}");
        assert_eq!(replay.status, status);
        assert!(replay.body.is_empty(), "{status}");
        assert_eq!(replay.header("content-length"), None, "{status}");
        assert_eq!(payments.runs(), 1);
    }
}
