//! Whose key a request is, as actix-web shows it to the layer.

use super::support::*;

/// A counter of runs behind a layer whose scope is `scope`d by a closure over the head, as a
/// tower application would set it up.
fn closure_scoped_server() -> (String, ServerHandle, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let layer = IdempotencyLayer::builder(Idempotency::new(MemoryStore::new()))
        .scope(|parts| Some(parts.headers.get("x-tenant")?.to_str().ok()?.to_owned()))
        .unscoped(idem_http::Unscoped::Shared)
        .build();
    let (url, handle) = actix_serve!(1, move || {
        let runs = counted.clone();
        App::new()
            .wrap(layer.clone())
            .default_service(web::to(move || {
                runs.fetch_add(1, Ordering::SeqCst);
                async { HttpResponse::Created().body("charged") }
            }))
    });
    (url, handle, runs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scope_closure_alone_is_refused_saying_to_use_actix_scope() {
    let (url, _server, runs) = closure_scoped_server();
    let client = client();
    let answer = keyed(&client, &format!("{url}/payments"), "pay-1", "{}")
        .header("x-tenant", "t1")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 500);
    let document: serde_json::Value =
        serde_json::from_slice(&answer.bytes().await.unwrap()).unwrap();
    assert_eq!(document["type"], problem::SCOPE_MISSING);
    let detail = document["detail"].as_str().unwrap();
    assert!(detail.contains("actix_scope"), "{detail}");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "nothing runs under a guessed scope"
    );
    // Requests without a key are not the layer's: they still reach the handler.
    let unkeyed = client.post(format!("{url}/payments")).send().await.unwrap();
    assert_eq!(unkeyed.status(), 201);
}
