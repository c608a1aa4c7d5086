//! A server stopped while a keyed handler runs.

use super::support::*;

/// Counts runs and holds each one at a gate the test opens.
struct Gated {
    runs: AtomicUsize,
    started: Notify,
    gate: Semaphore,
    finished: AtomicUsize,
}

impl Default for Gated {
    fn default() -> Self {
        Gated {
            runs: AtomicUsize::new(0),
            started: Notify::new(),
            gate: Semaphore::new(0),
            finished: AtomicUsize::new(0),
        }
    }
}

impl Gated {
    async fn run(&self) -> HttpResponse {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.started.notify_one();
        self.gate.acquire().await.unwrap().forget();
        self.finished.fetch_add(1, Ordering::SeqCst);
        HttpResponse::Created().body("done")
    }
}

fn gated_server(store: MemoryStore, gated: Arc<Gated>, lease: Duration) -> (String, ServerHandle) {
    let layer = IdempotencyLayer::builder(Idempotency::new(store))
        .lease(lease)
        .build();
    actix_serve!(1, move || {
        let gated = gated.clone();
        App::new().wrap(layer.clone()).route(
            "/gated",
            web::post().to(move || {
                let gated = gated.clone();
                async move { gated.run().await }
            }),
        )
    })
}

/// A graceful stop waits for the keyed request in flight: its answer is stored, and a new
/// server over the same store replays it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_mid_handler_stores_its_answer_for_the_next_server() {
    let store = MemoryStore::new();
    let gated = Arc::new(Gated::default());
    let (url, server) = gated_server(store.clone(), gated.clone(), Duration::from_secs(300));
    let client = client();
    let first = tokio::spawn(keyed(&client, &format!("{url}/gated"), "g-1", "{}").send());
    tokio::time::timeout(HANG, gated.started.notified())
        .await
        .unwrap();
    let stopping = tokio::spawn(server.stop(true));
    gated.gate.add_permits(1);
    let first = seen(first.await.unwrap().unwrap()).await;
    assert_eq!((first.status, first.replayed), (201, false));
    tokio::time::timeout(HANG, stopping).await.unwrap().unwrap();

    let (url, _next) = gated_server(store, gated.clone(), Duration::from_secs(300));
    let retry = send(keyed(&client, &format!("{url}/gated"), "g-1", "{}")).await;
    assert_eq!((retry.status, retry.replayed), (201, true));
    assert_eq!(gated.runs.load(Ordering::SeqCst), 1);
}

/// A forced stop cuts the handler off: the key stays held (the effect may be half made), and a
/// new server over the same store answers the retry with a 409 until the lease passes, then
/// runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_stop_mid_handler_keeps_the_key_held_until_its_lease() {
    let store = MemoryStore::new();
    let gated = Arc::new(Gated::default());
    let lease = Duration::from_secs(2);
    let (url, server) = gated_server(store.clone(), gated.clone(), lease);
    let client = client();
    let first = tokio::spawn(keyed(&client, &format!("{url}/gated"), "f-1", "{}").send());
    tokio::time::timeout(HANG, gated.started.notified())
        .await
        .unwrap();
    tokio::time::timeout(HANG, server.stop(false))
        .await
        .unwrap();
    assert!(first.await.unwrap().is_err(), "the first client is cut off");
    assert_eq!(gated.finished.load(Ordering::SeqCst), 0);

    let (url, _next) = gated_server(store, gated.clone(), lease);
    let retry = send(keyed(&client, &format!("{url}/gated"), "f-1", "{}")).await;
    assert_eq!(retry.status, 409);
    assert_eq!(retry.said, problem::IN_PROGRESS);
    // Waiting out the lease is the documented way back in.
    tokio::time::sleep(lease + Duration::from_millis(500)).await;
    gated.gate.add_permits(1);
    let after = send(keyed(&client, &format!("{url}/gated"), "f-1", "{}")).await;
    assert_eq!((after.status, after.replayed), (201, false));
    assert_eq!(gated.runs.load(Ordering::SeqCst), 2);
}

/// A client gone mid-handler leaves the handler running; a graceful stop that follows must not
/// cut it off, or the key stays held though nothing is in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_after_the_client_left_lets_the_handler_finish() {
    let store = MemoryStore::new();
    let gated = Arc::new(Gated::default());
    let (url, server) = gated_server(store.clone(), gated.clone(), Duration::from_secs(300));
    let client = client();
    let gone = tokio::spawn(keyed(&client, &format!("{url}/gated"), "d-1", "{}").send());
    tokio::time::timeout(HANG, gated.started.notified())
        .await
        .unwrap();
    gone.abort();
    let _ = gone.await;
    let stopping = tokio::spawn(server.stop(true));
    gated.gate.add_permits(1);
    tokio::time::timeout(HANG, stopping).await.unwrap().unwrap();

    let (url, _next) = gated_server(store, gated.clone(), Duration::from_secs(300));
    let retry = send(keyed(&client, &format!("{url}/gated"), "d-1", "{}")).await;
    assert_eq!(
        (retry.status, retry.replayed, retry.said.as_str()),
        (201, true, "done"),
        "the handler ran to its end and its answer was stored"
    );
    assert_eq!(gated.runs.load(Ordering::SeqCst), 1);
}
