//! What a handler reads of its request, wherever the layer is wrapped.

use super::support::*;

/// What a handler behind the layer reads of its request.
async fn views(
    request: actix_web::HttpRequest,
    data: web::Data<String>,
    body: Bytes,
) -> HttpResponse {
    use actix_web::HttpMessage;
    struct Marker;
    request.extensions_mut().insert(Marker);
    let outer = request.extensions().get::<Outer>().map(|o| o.0);
    HttpResponse::Created().body(format!(
        "id={} peer={} host={} data={} outer={:?} body={}",
        request.match_info().get("id").unwrap_or("-"),
        request.peer_addr().is_some(),
        request.connection_info().host().starts_with("127.0.0.1:"),
        data.get_ref(),
        outer,
        String::from_utf8_lossy(&body),
    ))
}

#[derive(Clone, Copy)]
struct Outer(&'static str);

/// Where the layer is wrapped: the app, a scope, a resource.
#[derive(Clone, Copy, Debug)]
enum Wrapped {
    None,
    App,
    Scope,
    Resource,
}

fn views_server(wrapped: Wrapped) -> (String, ServerHandle) {
    use actix_web::dev::Service;
    use actix_web::middleware::{Compress, Condition, Logger};
    let layer = IdempotencyLayer::new(Idempotency::new(MemoryStore::new()));
    actix_serve!(1, move || {
        let on = |at| {
            matches!(
                (wrapped, at),
                (Wrapped::App, 1) | (Wrapped::Scope, 2) | (Wrapped::Resource, 3)
            )
        };
        let resource = web::resource("/items/{id}").route(web::post().to(views));
        let scope = web::scope("/api")
            .wrap(Logger::default())
            .wrap(Condition::new(on(2), layer.clone()))
            .wrap(Compress::default())
            .service(resource.wrap(Condition::new(on(3), layer.clone())));
        App::new()
            .app_data(web::Data::new("shared".to_owned()))
            .wrap(Logger::default())
            .wrap(Condition::new(on(1), layer.clone()))
            .wrap_fn(|request, service| {
                use actix_web::HttpMessage;
                request.extensions_mut().insert(Outer("set outside"));
                let answer = service.call(request);
                async move {
                    let mut answer = answer.await?;
                    let marked = answer.request().extensions().get::<Outer>().is_some();
                    answer.headers_mut().insert(
                        actix_web::http::header::HeaderName::from_static("x-outer-saw"),
                        actix_web::http::header::HeaderValue::from_static(if marked {
                            "yes"
                        } else {
                            "no"
                        }),
                    );
                    Ok(answer)
                }
            })
            .wrap(actix_web::middleware::DefaultHeaders::new().add(("x-default", "1")))
            .service(scope)
    })
}

/// What a handler reads of its request (route parameters, peer, host, app data, extensions
/// set outside) is the same behind the layer wherever it is wrapped as without it, and the
/// middleware outside sees the answer and its request alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_behind_the_layer_read_their_request_as_without_it() {
    let client = client();
    let mut seen_by = Vec::new();
    for wrapped in [
        Wrapped::None,
        Wrapped::App,
        Wrapped::Scope,
        Wrapped::Resource,
    ] {
        let (url, _server) = views_server(wrapped);
        let url = format!("{url}/api/items/42?x=1");
        let mut answers = Vec::new();
        for _ in 0..2 {
            let response = keyed(&client, &url, "v-1", "hello")
                .header("accept-encoding", "identity")
                .send()
                .await
                .unwrap();
            let headers = response.headers().clone();
            let get = |name: &str| headers.get(name).map(|v| v.to_str().unwrap().to_owned());
            let flags = (
                get("x-default"),
                get("x-outer-saw"),
                get("content-encoding"),
            );
            answers.push((flags, seen(response).await));
        }
        seen_by.push((wrapped, answers));
    }
    let (_, without) = &seen_by[0];
    for (wrapped, answers) in &seen_by[1..] {
        assert_eq!(answers[0], without[0], "{wrapped:?}: the first answer");
        assert!(answers[1].1.replayed, "{wrapped:?}");
        assert_eq!(
            answers[1].1.said, without[0].1.said,
            "{wrapped:?}: the replay"
        );
        assert_eq!(
            answers[1].0, without[0].0,
            "{wrapped:?}: the replay's outer headers"
        );
    }
}
