//! The layer as poem middleware, in a poem app.

use std::io::Write;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use flate2::write::GzEncoder;
use flate2::Compression;
use idem_http::IdempotencyLayer;
use poem::endpoint::{make, BoxEndpoint};
use poem::http::StatusCode;
use poem::listener::TcpAcceptor;
use poem::{Endpoint, EndpointExt, IntoResponse, Request, Response, Server};

use crate::frameworks::fronts::Setup;
use crate::frameworks::shop::{Answer, Chunks, Shop, UserId, SERVICE_FAILS};

fn respond(answer: Answer) -> Response {
    match answer {
        Answer::Whole(status, content_type, body) => body
            .with_status(StatusCode::from_u16(status).unwrap())
            .with_content_type(content_type)
            .into_response(),
        Answer::Streamed(chunks) => Response::builder()
            .content_type("text/event-stream")
            .body(poem::Body::from_bytes_stream(IoChunks(chunks))),
        Answer::Failing => Response::builder()
            .status(StatusCode::CREATED)
            .header(SERVICE_FAILS, "1")
            .body("charged"),
    }
}

/// The chunks of a streamed answer, as poem takes a stream.
struct IoChunks(Chunks);

impl futures_core::Stream for IoChunks {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.0).poll_next(cx);
        polled.map(|chunk| chunk.map(|Ok(bytes)| bytes).map(Ok))
    }
}

/// Outside the layer: the answer gzipped when the client accepts it, as a compression
/// middleware does (poem's own needs codecs this workspace does not build).
async fn gzip(
    inner: Arc<BoxEndpoint<'static, Response>>,
    request: Request,
) -> poem::Result<Response> {
    let accepted = request
        .headers()
        .get("accept-encoding")
        .and_then(|accepted| accepted.to_str().ok())
        .is_some_and(|accepted| accepted.contains("gzip"));
    let response = inner.call(request).await?;
    if !accepted || response.headers().contains_key("content-encoding") {
        return Ok(response);
    }
    let (mut parts, body) = response.into_parts();
    let plain = body.into_bytes().await?;
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(&plain).unwrap();
    parts
        .headers
        .insert("content-encoding", "gzip".parse().unwrap());
    parts
        .headers
        .insert("vary", "accept-encoding".parse().unwrap());
    parts.headers.remove("content-length");
    let gzipped = poem::Body::from(encoder.finish().unwrap());
    Ok(Response::from_parts(parts, gzipped))
}

/// Serves the shop; its URL, and what keeps it running.
pub async fn serve(
    shop: Arc<Shop>,
    layer: IdempotencyLayer,
    setup: Setup,
) -> (String, Box<dyn Send>) {
    let handlers = make(move |request: Request| {
        let shop = shop.clone();
        async move {
            let path = request.uri().path().to_owned();
            let body = request.into_body().into_bytes().await.unwrap();
            respond(shop.serve(&path, body).await)
        }
    });
    let app = handlers
        // Inside the layer: the answers the shop marks fail once the handler has run.
        .around(|inner, request| async move {
            let response = inner.call(request).await?.into_response();
            if response.headers().contains_key(SERVICE_FAILS) {
                let timed_out = "timed out";
                return Err(poem::Error::from_string(
                    timed_out,
                    StatusCode::GATEWAY_TIMEOUT,
                ));
            }
            Ok(response)
        })
        .with(layer)
        .around(|inner, mut request| async move {
            let user = request
                .headers()
                .get("x-user")
                .and_then(|user| user.to_str().ok());
            if let Some(user) = user.map(str::to_owned) {
                request.extensions_mut().insert(UserId(user));
            }
            inner.call(request).await
        })
        .boxed();
    let app = if setup.compressed {
        app.around(gzip).boxed()
    } else {
        app
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let acceptor = TcpAcceptor::from_tokio(listener).unwrap();
    let server = tokio::spawn(async move {
        Server::new_with_acceptor(acceptor).run(app).await.unwrap();
    });
    (url, Box::new(AbortOnDrop(server)))
}

/// Stops the server with the test.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What only poem has: the request as poem made it reaches the endpoint behind the layer,
/// its client's address included (the tower adapter handed it on without one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_endpoint_behind_the_layer_sees_the_clients_address() {
    let idem = idem_core::Idempotency::new(idem_stores::memory::MemoryStore::new());
    let app = make(|request: Request| async move {
        let remote = request.remote_addr().as_socket_addr().copied();
        let in_call = idem_core::context().is_some();
        format!("{remote:?} in call: {in_call}").with_status(StatusCode::CREATED)
    })
    .with(IdempotencyLayer::new(idem));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/payments", listener.local_addr().unwrap());
    let acceptor = TcpAcceptor::from_tokio(listener).unwrap();
    let _server = AbortOnDrop(tokio::spawn(async move {
        Server::new_with_acceptor(acceptor).run(app).await.unwrap();
    }));
    let client = reqwest::Client::new();
    let answered = client
        .post(&url)
        .header("idempotency-key", "pay-1")
        .header("authorization", "Bearer shop-client")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 201);
    let said = answered.text().await.unwrap();
    assert!(
        said.starts_with("Some(127.0.0.1:") && said.ends_with("in call: true"),
        "the endpoint saw {said:?}"
    );
}
