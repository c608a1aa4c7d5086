//! What handlers answer, stored and replayed as the contract says.

use super::support::*;

/// What handlers return, as the first client and the retry see it on actix-web.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_answers_are_stored_and_replayed_as_the_contract_says() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let layer = IdempotencyLayer::builder(Idempotency::new(MemoryStore::new()))
        .max_response_body(1024)
        .build();
    #[derive(serde::Deserialize, serde::Serialize)]
    struct Order {
        amount: u32,
    }
    let (url, _server) = actix_serve!(1, move || {
        let runs = counted.clone();
        let count = move || runs.fetch_add(1, Ordering::SeqCst);
        let c1 = count.clone();
        let c2 = count.clone();
        let c3 = count.clone();
        let c4 = count.clone();
        let c5 = count.clone();
        let c6 = count.clone();
        let c7 = count.clone();
        App::new()
            .wrap(layer.clone())
            .route(
                "/finish",
                web::post().to(move || {
                    c1();
                    async { HttpResponse::Ok().finish() }
                }),
            )
            .route(
                "/nocontent",
                web::post().to(move || {
                    c2();
                    async { HttpResponse::NoContent().finish() }
                }),
            )
            .route(
                "/cookies",
                web::post().to(move || {
                    c3();
                    async {
                        HttpResponse::Ok()
                            .append_header(("set-cookie", "a=1"))
                            .append_header(("set-cookie", "b=2"))
                            .insert_header(("content-length", "2"))
                            .body("ok")
                    }
                }),
            )
            .route(
                "/error",
                web::post().to(move || {
                    c4();
                    async {
                        Err::<HttpResponse, _>(actix_web::error::ErrorInternalServerError("boom"))
                    }
                }),
            )
            .route(
                "/json",
                web::post().to(move |order: web::Json<Order>| {
                    c5();
                    async move {
                        web::Json(Order {
                            amount: order.amount * 2,
                        })
                    }
                }),
            )
            .route(
                "/large",
                web::post().to(move || {
                    c6();
                    async { HttpResponse::Ok().body("z".repeat(4096)) }
                }),
            )
            .route(
                "/notmodified",
                web::post().to(move || {
                    c7();
                    async {
                        HttpResponse::NotModified()
                            .insert_header(("etag", "\"v1\""))
                            .finish()
                    }
                }),
            )
    });
    let client = client();
    let twice = |path: &'static str, key: &'static str, body: &'static str| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let go = || {
                keyed(&client, &format!("{url}{path}"), key, body)
                    .header("content-type", "application/json")
            };
            let first = go().send().await.unwrap();
            let first_cookies = first.headers().get_all("set-cookie").iter().count();
            let first = seen(first).await;
            let again = go().send().await.unwrap();
            let again_cookies = again.headers().get_all("set-cookie").iter().count();
            (first, first_cookies, seen(again).await, again_cookies)
        }
    };
    let (f, _, f2, _) = twice("/finish", "f", "{}").await;
    assert_eq!(
        (f.status, f2.status, f2.replayed, f2.said.as_str()),
        (200, 200, true, "")
    );
    let (n, _, n2, _) = twice("/nocontent", "n", "{}").await;
    assert_eq!((n.status, n2.status, n2.replayed), (204, 204, true));
    let (c, c_cookies, c2, c2_cookies) = twice("/cookies", "c", "{}").await;
    assert_eq!(
        (c.said.as_str(), c_cookies),
        ("ok", 2),
        "the first answer has both cookies"
    );
    assert_eq!((c2.replayed, c2.said.as_str(), c2_cookies), (true, "ok", 0));
    let (e, _, e2, _) = twice("/error", "e", "{}").await;
    assert_eq!(
        (e.status, e2.status, e2.replayed),
        (500, 500, false),
        "a 500 releases"
    );
    let (j, _, j2, _) = twice("/json", "j", "not json").await;
    assert_eq!(
        (j.status, j2.status, j2.replayed),
        (400, 400, false),
        "a 400 releases"
    );
    let (k, _, k2, _) = twice("/json", "k", r#"{"amount":2}"#).await;
    assert_eq!((k.said.as_str(), k2.replayed), (r#"{"amount":4}"#, true));
    let (l, _, l2, _) = twice("/large", "l", "{}").await;
    assert_eq!(
        (l.said.len(), l2.said.as_str()),
        (4096, problem::RESPONSE_NOT_KEPT)
    );
    let (m, _, m2, _) = twice("/notmodified", "m", "{}").await;
    assert_eq!((m.status, m2.status, m2.replayed), (304, 304, true));
    // Once each but the error, which runs twice, and the bad JSON, which never reaches it.
    assert_eq!(runs.load(Ordering::SeqCst), 8);
}
