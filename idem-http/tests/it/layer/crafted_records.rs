//! Records written by someone else: a replay puts on the wire only what the layer itself would
//! have stored, whatever the record says; and a record stored in the JSON form, as before the
//! frame, still replays.

use crate::support;

use std::sync::Arc;

use idem_conformance::{Intercepted, Interceptor};
use idem_core::store::{Completed, Outcome, OwnerToken, Store};
use idem_core::{Idempotency, Key, StoreError};
use idem_http::{problem, IdempotencyLayer, RecordedBody, RecordedResponse};
use idem_stores::memory::MemoryStore;
use support::frames::{frame, json_form, FRAME_START};
use support::{app, send, serve, Payments, Server};

/// A memory store whose stored responses are rewritten by `craft` on their way in, as by
/// someone with write access to the store, and stored in the form `form` writes.
struct Crafting {
    memory: MemoryStore,
    craft: fn(&mut RecordedResponse),
    form: fn(&RecordedResponse) -> Vec<u8>,
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
        assert!(stored.starts_with(FRAME_START), "the layer stores a frame");
        let mut response = RecordedResponse::decode(stored).unwrap();
        (self.craft)(&mut response);
        let outcome = Outcome::ok((self.form)(&response));
        let crafted = Completed::new(*record.fingerprint(), outcome, record.expires_at());
        self.memory.complete(key, owner, &crafted).await
    }
}

/// A server whose records `craft` rewrites as frames, with its layer as `configure` leaves
/// it.
async fn crafted(
    craft: fn(&mut RecordedResponse),
    configure: fn(idem_http::IdempotencyLayerBuilder) -> idem_http::IdempotencyLayerBuilder,
) -> (Server, Arc<Payments>) {
    stored_as(craft, frame, configure).await
}

/// A server whose records `craft` rewrites, stored as `form` writes them.
async fn stored_as(
    craft: fn(&mut RecordedResponse),
    form: fn(&RecordedResponse) -> Vec<u8>,
    configure: fn(idem_http::IdempotencyLayerBuilder) -> idem_http::IdempotencyLayerBuilder,
) -> (Server, Arc<Payments>) {
    let store = Intercepted(Crafting {
        memory: MemoryStore::new(),
        craft,
        form,
    });
    let layer = configure(IdempotencyLayer::builder(Idempotency::new(store))).build();
    let payments = Arc::new(Payments::default());
    (serve(app(layer, payments.clone())).await, payments)
}

fn kept(text: &str) -> RecordedBody {
    RecordedBody::Kept(text.as_bytes().to_vec())
}

#[tokio::test]
async fn a_record_stored_in_the_json_form_before_the_frame_still_replays() {
    let (server, payments) = stored_as(|_| {}, json_form, |layer| layer).await;

    let first = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert_eq!(first.status, 201);
    let replay = send(server.post("/payments", Some("pay-1"), "{}")).await;

    assert!(replay.replayed());
    assert_eq!(replay.status, 201);
    assert_eq!(replay.body, first.body);
    assert_eq!(replay.header("location"), Some("/payments/1"));
    assert_eq!(replay.header("content-type"), first.header("content-type"));
    assert_eq!(payments.runs(), 1);
}

#[tokio::test]
async fn a_replay_carries_no_header_off_the_list_and_its_own_length() {
    let (server, payments) = crafted(
        |stored| {
            for (name, value) in [
                ("set-cookie", "session=stolen"),
                ("access-control-allow-origin", "*"),
                ("content-length", "2"),
                ("connection", "close"),
            ] {
                stored.headers.push((name.to_owned(), value.to_owned()));
            }
            stored.body = kept("0123456789");
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
                101 => |stored: &mut RecordedResponse| stored.status = 101,
                _ => |stored: &mut RecordedResponse| stored.status = 999,
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
        |stored| stored.body = kept(&"x".repeat(4096)),
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
                204 => |stored: &mut RecordedResponse| stored.status = 204,
                205 => |stored: &mut RecordedResponse| stored.status = 205,
                _ => |stored: &mut RecordedResponse| stored.status = 304,
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
                204 => |stored: &mut RecordedResponse| {
                    stored.status = 204;
                    stored.body = kept("");
                },
                _ => |stored: &mut RecordedResponse| {
                    stored.status = 304;
                    stored.body = kept("");
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
