//! Response bodies that break halfway, and a handler that panics.

use super::support::*;

/// A streamed body that panics halfway is a failed body under the tower layer: the first
/// client's body breaks off, and the retry is told the answer was not kept. Under actix-web
/// the same handler must not leave a truncated body stored as the whole answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_body_that_panics_halfway_is_not_stored_as_whole() {
    let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_url = axum_serve(
        axum::Router::new()
            .route(
                "/stream",
                axum::routing::post(|| async {
                    axum::body::Body::from_stream(PanicsAfterFirst(0))
                }),
            )
            .layer(tower_layer),
    )
    .await;
    let tower = broken_stream(&format!("{tower_url}/stream")).await;

    let (url, _server) = actix_serve!(1, move || {
        App::new().wrap(layer.clone()).route(
            "/stream",
            web::post().to(|| async { HttpResponse::Ok().streaming(PanicsAfterFirst(0)) }),
        )
    });
    let actix = broken_stream(&format!("{url}/stream")).await;

    assert_eq!(tower.retry.said, problem::RESPONSE_NOT_KEPT);
    assert!(!tower.first_read_whole);
    assert_eq!(
        tower, actix,
        "the tower layer (left) and actix-web (right) differ"
    );
}

/// The same with a body of declared length (`Content-Length` set before `streaming`): under
/// the tower layer the body is read whole before it is answered, its panic is a failure, and
/// both the first client and the retry are told the answer was not kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sized_streamed_body_that_panics_halfway_is_not_stored_as_whole() {
    let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_url = axum_serve(
        axum::Router::new()
            .route(
                "/stream",
                axum::routing::post(|| async {
                    axum::response::Response::builder()
                        .header("content-length", "10")
                        .body(axum::body::Body::from_stream(PanicsAfterFirst(0)))
                        .unwrap()
                }),
            )
            .layer(tower_layer),
    )
    .await;
    let (url, _server) = actix_serve!(1, move || {
        App::new().wrap(layer.clone()).route(
            "/stream",
            web::post().to(|| async {
                HttpResponse::Ok()
                    .insert_header(("content-length", "10"))
                    .streaming(PanicsAfterFirst(0))
            }),
        )
    });
    let client = client();
    let mut seen_by = Vec::new();
    for url in [tower_url, url] {
        let url = format!("{url}/stream");
        let first = send(keyed(&client, &url, "sized-1", "{}")).await;
        let retry = send(keyed(&client, &url, "sized-1", "{}")).await;
        seen_by.push((first, retry));
    }
    let (tower, actix) = (&seen_by[0], &seen_by[1]);
    assert_eq!(tower.0.said, problem::RESPONSE_NOT_KEPT);
    assert_eq!(tower.1.said, problem::RESPONSE_NOT_KEPT);
    assert_eq!(
        tower, actix,
        "the tower layer (left) and actix-web (right) differ"
    );
}

/// A streamed body that fails with an error: the retry is told the answer was not kept, on
/// both front ends alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_body_that_fails_halfway_is_not_kept_on_both() {
    let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_url = axum_serve(
        axum::Router::new()
            .route(
                "/stream",
                axum::routing::post(|| async { axum::body::Body::from_stream(FailsAfterFirst(0)) }),
            )
            .layer(tower_layer),
    )
    .await;
    let tower = broken_stream(&format!("{tower_url}/stream")).await;
    let (url, _server) = actix_serve!(1, move || {
        App::new().wrap(layer.clone()).route(
            "/stream",
            web::post().to(|| async { HttpResponse::Ok().streaming(FailsAfterFirst(0)) }),
        )
    });
    let actix = broken_stream(&format!("{url}/stream")).await;
    assert_eq!(tower.retry.said, problem::RESPONSE_NOT_KEPT);
    assert_eq!(tower, actix);
}

/// A handler that panics takes its request with it, so the layer can answer actix-web only
/// with an error whose response is its 500: middleware outside the layer that decorates only
/// the responses it gets (`DefaultHeaders`, a CORS middleware) does not see it, as it would
/// under tower. The answer itself, and the key held, are the tower layer's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_500_for_a_panicked_handler_is_an_error_to_middleware_outside() {
    let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    let tower_url = axum_serve(
        axum::Router::new()
            .route(
                "/panics",
                axum::routing::post(|| async {
                    if true {
                        panic!("the handler fails halfway");
                    }
                }),
            )
            .layer(tower_layer)
            .layer(axum::middleware::map_response(
                |mut response: axum::response::Response| async move {
                    response
                        .headers_mut()
                        .insert("x-outer", "set".parse().unwrap());
                    response
                },
            )),
    )
    .await;
    let (url, _server) = actix_serve!(1, move || {
        App::new()
            .wrap(layer.clone())
            .wrap(actix_web::middleware::DefaultHeaders::new().add(("x-outer", "set")))
            .route(
                "/panics",
                web::post().to(|| async {
                    if true {
                        panic!("the handler fails halfway");
                    }
                    HttpResponse::Ok().finish()
                }),
            )
    });
    let client = client();
    let mut outer_headers = Vec::new();
    for url in [tower_url, url] {
        let response = keyed(&client, &format!("{url}/panics"), "p-1", "{}")
            .send()
            .await
            .unwrap();
        outer_headers.push(response.headers().contains_key("x-outer"));
        let seen = seen(response).await;
        assert_eq!(
            (seen.status, seen.said.as_str()),
            (500, problem::NOT_RECORDED)
        );
        let retry = send(keyed(&client, &format!("{url}/panics"), "p-1", "{}")).await;
        assert_eq!(
            (retry.status, retry.said.as_str()),
            (409, problem::IN_PROGRESS)
        );
    }
    assert_eq!(outer_headers, [true, false], "tower, then actix-web");
}
