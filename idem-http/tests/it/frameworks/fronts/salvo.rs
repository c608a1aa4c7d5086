//! The layer as a salvo hoop, in a salvo app.

use std::sync::Arc;

use http_body_util::BodyExt;
use idem_http::IdempotencyLayer;
use salvo::catcher::Catcher;
use salvo::conn::tcp::TcpAcceptor;
use salvo::http::{ResBody, StatusCode, StatusError};
use salvo::prelude::*;
use tower::ServiceBuilder;
use tower_http::compression::{CompressionBody, CompressionLayer};

use crate::frameworks::fronts::Setup;
use crate::frameworks::shop::{Answer, Shop, UserId, SERVICE_FAILS};

fn respond(answer: Answer, response: &mut Response) {
    match answer {
        Answer::Whole(status, content_type, body) => {
            response.status_code(StatusCode::from_u16(status).unwrap());
            response
                .add_header("content-type", content_type, true)
                .unwrap();
            response.body(body);
        }
        Answer::Streamed(chunks) => {
            response.status_code(StatusCode::OK);
            response
                .add_header("content-type", "text/event-stream", true)
                .unwrap();
            response.stream(chunks);
        }
        Answer::Failing => {
            response.status_code(StatusCode::CREATED);
            response.add_header(SERVICE_FAILS, "1", true).unwrap();
            response.body("charged");
        }
    }
}

/// Every route: the shop's answer to the request's path.
struct Handlers(Arc<Shop>);

#[salvo::async_trait]
impl Handler for Handlers {
    async fn handle(
        &self,
        request: &mut Request,
        _: &mut Depot,
        response: &mut Response,
        _: &mut FlowCtrl,
    ) {
        let path = request.uri().path().to_owned();
        let body = request.payload().await.unwrap().clone();
        respond(self.0.clone().serve(&path, body).await, response);
    }
}

/// Inside the layer: the answers the shop marks fail once the handler has run, with salvo's
/// own error.
#[handler]
async fn fail_marked(
    request: &mut Request,
    depot: &mut Depot,
    response: &mut Response,
    ctrl: &mut FlowCtrl,
) {
    ctrl.call_next(request, depot, response).await;
    if response.headers_mut().remove(SERVICE_FAILS).is_some() {
        response.render(StatusError::gateway_timeout().brief("timed out"));
    }
}

/// Outside the layer: the principal, from the `x-user` header.
#[handler]
async fn set_principal(request: &mut Request) {
    let user = request
        .headers()
        .get("x-user")
        .and_then(|user| user.to_str().ok());
    if let Some(user) = user.map(str::to_owned) {
        request.extensions_mut().insert(UserId(user));
    }
}

/// Salvo's error pages as the other front ends write theirs: the brief, as plain text.
#[handler]
async fn brief_only(response: &mut Response) {
    if let ResBody::Error(error) = &response.body {
        let brief = error.brief.clone();
        response.body = ResBody::None;
        response.render(Text::Plain(brief));
    }
}

/// Serves the shop; its URL, and what keeps it running.
pub async fn serve(
    shop: Arc<Shop>,
    layer: IdempotencyLayer,
    setup: Setup,
) -> (String, Box<dyn Send>) {
    let mut router = Router::new();
    if setup.compressed {
        // tower-http's compression, as salvo's tower adapter takes a body whose error is an
        // `std::error::Error`.
        let compression = ServiceBuilder::new()
            .map_response(|response: http::Response<CompressionBody<ResBody>>| {
                response.map(|body| body.map_err(std::io::Error::other))
            })
            .layer(CompressionLayer::new());
        router = router.hoop(compression.compat::<salvo::http::ReqBody>());
    }
    let router = router
        .hoop(set_principal)
        .hoop(layer)
        .hoop(fail_marked)
        .push(Router::with_path("{**path}").post(Handlers(shop)));
    let service = Service::new(router).catcher(Catcher::new(brief_only));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let acceptor = TcpAcceptor::try_from(listener).unwrap();
    let server = tokio::spawn(Server::new(acceptor).serve(service));
    (url, Box::new(AbortOnDrop(server)))
}

/// Stops the server with the test.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Writes down that the handler ran, for the hoop outside the layer.
#[handler]
async fn leaves_a_note(request: &mut Request, depot: &mut Depot, response: &mut Response) {
    depot.insert(
        "note",
        format!("seen {}", request.param::<String>("id").unwrap()),
    );
    let remote = request.remote_addr().clone().into_std();
    response.status_code(StatusCode::CREATED);
    response.render(format!("{remote:?}"));
}

/// Outside the layer: puts what the handler left in the depot on the response.
#[handler]
async fn reads_the_note(
    request: &mut Request,
    depot: &mut Depot,
    response: &mut Response,
    ctrl: &mut FlowCtrl,
) {
    ctrl.call_next(request, depot, response).await;
    let note = depot.get::<String>("note").cloned().unwrap_or_default();
    response.add_header("x-note", note, true).unwrap();
}

/// What only salvo has: the request, depot and response move into the call and come back,
/// so the handler sees the request as salvo made it, and the hoops outside the layer see
/// what it left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_depot_and_request_cross_the_call_and_come_back() {
    let idem = idem_core::Idempotency::new(idem_stores::memory::MemoryStore::new());
    let router = Router::new()
        .hoop(reads_the_note)
        .hoop(IdempotencyLayer::new(idem))
        .push(Router::with_path("payments/{id}").post(leaves_a_note));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/payments/p-7", listener.local_addr().unwrap());
    let acceptor = TcpAcceptor::try_from(listener).unwrap();
    let _server = AbortOnDrop(tokio::spawn(Server::new(acceptor).serve(router)));
    let client = reqwest::Client::new();
    let send = || {
        client
            .post(&url)
            .header("idempotency-key", "pay-1")
            .header("authorization", "Bearer shop-client")
            .body("{}")
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), 201);
    assert_eq!(first.headers()["x-note"], "seen p-7");
    let said = first.text().await.unwrap();
    assert!(
        said.starts_with("Some(127.0.0.1:"),
        "the handler saw {said:?}"
    );
    let replay = send().await.unwrap();
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.headers()["x-note"], "", "a replay runs no handler");
    assert_eq!(replay.text().await.unwrap(), said);
}

/// Outside the layer: parses the body as a form, which salvo does not keep as the payload.
#[handler]
async fn parses_the_form(request: &mut Request) {
    request.form_data().await.unwrap();
}

#[handler]
async fn charges_the_form(request: &mut Request, response: &mut Response) {
    let amount = request.form::<String>("amount").await;
    response.status_code(StatusCode::CREATED);
    response.render(format!("charged {amount:?}"));
}

/// A body a hoop before the layer read without keeping it would be taken for an empty one:
/// the layer refuses the request instead, and nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_read_away_before_the_layer_is_refused() {
    let idem = idem_core::Idempotency::new(idem_stores::memory::MemoryStore::new());
    let router = Router::new()
        .hoop(parses_the_form)
        .hoop(IdempotencyLayer::new(idem))
        .push(Router::with_path("payments").post(charges_the_form));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/payments", listener.local_addr().unwrap());
    let acceptor = TcpAcceptor::try_from(listener).unwrap();
    let _server = AbortOnDrop(tokio::spawn(Server::new(acceptor).serve(router)));
    let refused = reqwest::Client::new()
        .post(&url)
        .header("idempotency-key", "pay-1")
        .header("authorization", "Bearer shop-client")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("amount=10")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 500);
    let document: serde_json::Value =
        serde_json::from_slice(&refused.bytes().await.unwrap()).unwrap();
    assert_eq!(document["type"], idem_http::problem::FAILED);
}
