//! What the layer stores of an answer: its frame, whose body is the handler's bytes as they
//! are, and which a replay answers with byte for byte.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::routing::post;
use axum::Router;
use idem_conformance::{Intercepted, Interceptor};
use idem_core::store::{Completed, OwnerToken, Record, Store};
use idem_core::{Idempotency, Key, StoreError};
use idem_http::{IdempotencyLayer, RecordedBody, RecordedResponse};
use idem_stores::memory::MemoryStore;
use support::frames::FRAME_START;
use support::{send, serve};

/// A memory store that notes the key of each record completed in it.
#[derive(Default)]
struct Noting {
    memory: MemoryStore,
    completed: Mutex<Vec<Key>>,
}

#[async_trait::async_trait]
impl Interceptor for Noting {
    fn inner(&self) -> &dyn Store {
        &self.memory
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        self.completed.lock().unwrap().push(key.clone());
        self.memory.complete(key, owner, record).await
    }
}

/// Every byte value, and then some, as no text is.
fn binary_body() -> Vec<u8> {
    (0..=255u8).cycle().take(3000).collect()
}

#[tokio::test]
async fn a_binary_answer_is_stored_as_a_frame_and_replayed_byte_for_byte() {
    let store = Arc::new(Intercepted(Noting::default()));
    let layer = IdempotencyLayer::builder(Idempotency::from_arc(store.clone())).build();
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let app = Router::new()
        .route(
            "/blobs",
            post(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                async {
                    (
                        [("content-type", "application/octet-stream")],
                        binary_body(),
                    )
                }
            }),
        )
        .layer(layer);
    let server = serve(app).await;

    let first = send(server.post("/blobs", Some("blob-1"), "{}")).await;
    assert_eq!(first.status, 200);
    assert_eq!(&first.body[..], &binary_body()[..]);

    let keys = store.0.completed.lock().unwrap().clone();
    assert_eq!(keys.len(), 1, "one record completed");
    let Some(Record::Completed(record)) = store.get(&keys[0]).await.unwrap() else {
        panic!("the completed record");
    };
    let stored = record.outcome().body();
    assert!(
        stored.starts_with(FRAME_START),
        "stored as a frame: {:?}",
        &stored[..stored.len().min(8)]
    );
    assert!(
        stored.ends_with(&binary_body()),
        "the frame ends with the body as it is, not in base64"
    );
    let read = RecordedResponse::decode(stored).unwrap();
    assert_eq!(read.body, RecordedBody::Kept(binary_body()));

    let replay = send(server.post("/blobs", Some("blob-1"), "{}")).await;
    assert!(replay.replayed());
    assert_eq!(replay.status, 200);
    assert_eq!(&replay.body[..], &binary_body()[..]);
    assert_eq!(
        replay.header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the handler ran once");
}
