//! Requests actix-web reads its own way, and many at once.

use super::support::*;

/// Sends `request` as raw bytes and reads the answer until the server closes.
fn raw(url: &str, request: &[u8]) -> String {
    let address = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(HANG)).unwrap();
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// A counter of runs behind the layer, on actix-web, echoing the request's body.
fn echo_server(workers: usize) -> (String, ServerHandle, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let layer = IdempotencyLayer::builder(Idempotency::new(MemoryStore::new()))
        .wait(HANG)
        .build();
    let (url, handle) = actix_serve!(workers, move || {
        let runs = counted.clone();
        App::new().wrap(layer.clone()).default_service(web::to(
            move |request: actix_web::HttpRequest, body: Bytes| {
                let runs = runs.clone();
                async move {
                    let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                    HttpResponse::Created().body(format!(
                        "run {n}: {} {} {}",
                        request.path(),
                        request.query_string(),
                        String::from_utf8_lossy(&body)
                    ))
                }
            },
        ))
    });
    (url, handle, runs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_actix_web_reads_its_own_way_are_fingerprinted_alike() {
    let (url, _server, runs) = echo_server(1);
    let client = client();
    // Chunked and sized bodies of the same bytes are one request.
    let sized = send(keyed(&client, &format!("{url}/pay"), "c-1", "abc")).await;
    let url1 = url.clone();
    let chunked = tokio::task::spawn_blocking(move || {
        raw(
            &url1,
            b"POST /pay HTTP/1.1\r\nhost: x\r\nidempotency-key: c-1\r\n\
              authorization: Bearer probe\r\ntransfer-encoding: chunked\r\n\
              connection: close\r\n\r\n1\r\na\r\n2\r\nbc\r\n0\r\n\r\n",
        )
    })
    .await
    .unwrap();
    let chunked = Seen {
        status: chunked[9..12].parse().unwrap(),
        replayed: chunked.contains("idempotent-replayed: true"),
        said: chunked.split("\r\n\r\n").nth(1).unwrap().to_owned(),
    };
    assert_eq!((sized.status, chunked.replayed), (201, true));
    assert_eq!(chunked.said, sized.said);
    // Queries: the same in another order is a retry, another value is another request.
    let q = send(keyed(&client, &format!("{url}/pay?a=1&b=2"), "q-1", "")).await;
    let q2 = send(keyed(&client, &format!("{url}/pay?b=2&a=1"), "q-1", "")).await;
    let q3 = send(keyed(&client, &format!("{url}/pay?a=1&b=3"), "q-1", "")).await;
    assert_eq!((q.status, q2.replayed, q3.status), (201, true, 422));
    // Percent-encoded paths.
    let p = send(keyed(&client, &format!("{url}/caf%C3%A9/a%2Fb"), "p-1", "")).await;
    let p2 = send(keyed(&client, &format!("{url}/caf%C3%A9/a%2Fb"), "p-1", "")).await;
    let p3 = send(keyed(&client, &format!("{url}/caf%C3%A9/a/b"), "p-1", "")).await;
    assert_eq!((p.status, p2.replayed, p3.status), (201, true, 422));
    // Empty bodies.
    let e = send(keyed(&client, &format!("{url}/e"), "e-1", "")).await;
    let e2 = send(keyed(&client, &format!("{url}/e"), "e-1", "")).await;
    assert!(e2.replayed && e.status == 201);
    // A non-UTF-8 Authorization is a scope like any other.
    let latin = reqwest::header::HeaderValue::from_bytes(b"Bearer caf\xe9").unwrap();
    let n = client
        .post(format!("{url}/n"))
        .header("idempotency-key", "n-1")
        .header("authorization", latin.clone());
    let n1 = send(n).await;
    let n2 = send(
        client
            .post(format!("{url}/n"))
            .header("idempotency-key", "n-1")
            .header("authorization", latin),
    )
    .await;
    assert_eq!((n1.status, n2.replayed), (201, true));
    // Two keys are no key.
    let two =
        send(keyed(&client, &format!("{url}/t"), "t-1", "").header("idempotency-key", "t-2")).await;
    assert_eq!(two.status, 400);
    assert_eq!(runs.load(Ordering::SeqCst), 5);

    // HTTP/1.0, and `Expect: 100-continue`, on raw connections.
    let old = |key: &str| {
        format!(
            "POST /old HTTP/1.0\r\nidempotency-key: {key}\r\nauthorization: Bearer probe\r\n\
             content-length: 3\r\n\r\nold"
        )
    };
    let url2 = url.clone();
    let (h10, h10_again) = tokio::task::spawn_blocking(move || {
        (
            raw(&url2, old("h-1").as_bytes()),
            raw(&url2, old("h-1").as_bytes()),
        )
    })
    .await
    .unwrap();
    assert!(h10.starts_with("HTTP/1.0 201"), "{h10}");
    assert!(
        h10_again.contains("idempotent-replayed: true"),
        "{h10_again}"
    );
    assert!(h10_again.ends_with(" old"), "{h10_again}");
    let url3 = url.clone();
    let expect = tokio::task::spawn_blocking(move || {
        let address = url3.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        stream.set_read_timeout(Some(HANG)).unwrap();
        stream
            .write_all(
                b"POST /expect HTTP/1.1\r\nhost: x\r\nidempotency-key: x-1\r\n\
                  authorization: Bearer probe\r\nexpect: 100-continue\r\n\
                  content-length: 4\r\nconnection: close\r\n\r\n",
            )
            .unwrap();
        let mut go = [0u8; 25];
        stream.read_exact(&mut go).unwrap();
        stream.write_all(b"body").unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        (
            String::from_utf8_lossy(&go).into_owned(),
            String::from_utf8_lossy(&answer).into_owned(),
        )
    })
    .await
    .unwrap();
    assert!(expect.0.starts_with("HTTP/1.1 100 Continue"), "{expect:?}");
    assert!(expect.1.starts_with("HTTP/1.1 201"), "{expect:?}");
    assert!(expect.1.ends_with("/expect  body"), "{expect:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 7);
}

/// Many duplicates of one key at once run the handler once, on one worker and on four; many
/// distinct keys at once each run once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_duplicates_run_once_and_distinct_keys_each_once() {
    for workers in [1, 4] {
        let (url, _server, runs) = echo_server(workers);
        let client = client();
        let duplicates: Vec<_> = (0..32)
            .map(|_| tokio::spawn(keyed(&client, &format!("{url}/d"), "same", "x").send()))
            .collect();
        let mut said = Vec::new();
        for duplicate in duplicates {
            let seen = seen(duplicate.await.unwrap().unwrap()).await;
            assert_eq!(seen.status, 201, "{workers} workers: {seen:?}");
            said.push(seen.said);
        }
        assert!(said.iter().all(|s| s == &said[0]));
        assert_eq!(runs.load(Ordering::SeqCst), 1, "{workers} workers");
        let distinct: Vec<_> = (0..64)
            .map(|i| {
                tokio::spawn(keyed(&client, &format!("{url}/d"), &format!("k{i}"), "x").send())
            })
            .collect();
        for one in distinct {
            assert_eq!(one.await.unwrap().unwrap().status(), 201);
        }
        assert_eq!(runs.load(Ordering::SeqCst), 65, "{workers} workers");
    }
}
