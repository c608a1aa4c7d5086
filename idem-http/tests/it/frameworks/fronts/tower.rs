//! The tower layer in an axum app.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::error_handling::HandleErrorLayer;
use axum::extract::{Request, State};
use axum::http::{StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use idem_http::IdempotencyLayer;
use tower::ServiceBuilder;
use tower_http::compression::CompressionLayer;

use crate::frameworks::fronts::Setup;
use crate::frameworks::shop::{Answer, Shop, UserId, SERVICE_FAILS};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn respond(answer: Answer) -> Response {
    let (status, content_type, body) = match answer {
        Answer::Whole(status, content_type, body) => (status, content_type, Body::from(body)),
        Answer::Streamed(chunks) => (200, "text/event-stream", Body::from_stream(chunks)),
        Answer::Failing => {
            let marked = Response::builder().status(201).header(SERVICE_FAILS, "1");
            return marked.body(Body::from("charged")).unwrap();
        }
    };
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(body)
        .unwrap()
}

async fn set_principal(mut request: Request, next: Next) -> Response {
    let user = request
        .headers()
        .get("x-user")
        .and_then(|user| user.to_str().ok());
    if let Some(user) = user.map(str::to_owned) {
        request.extensions_mut().insert(UserId(user));
    }
    next.run(request).await
}

/// A service error for the answers the shop marks: the handler has run, and what answers
/// the client is the error, as after a timeout inside the layer.
fn fail_marked(answered: Result<Response, Infallible>) -> Result<Response, BoxError> {
    let Ok(response) = answered;
    if response.headers().contains_key(SERVICE_FAILS) {
        return Err("timed out".into());
    }
    Ok(response)
}

/// Serves the shop; its URL, and what keeps it running.
pub async fn serve(
    shop: Arc<Shop>,
    layer: IdempotencyLayer,
    setup: Setup,
) -> (String, Box<dyn Send>) {
    let handlers = Router::new()
        .route(
            "/{*path}",
            post(
                |State(shop): State<Arc<Shop>>, uri: Uri, body: Bytes| async move {
                    respond(shop.serve(uri.path(), body).await)
                },
            ),
        )
        .with_state(shop);
    let served = ServiceBuilder::new()
        .layer(HandleErrorLayer::new(|_: BoxError| async {
            (StatusCode::GATEWAY_TIMEOUT, "timed out")
        }))
        .layer(layer)
        .map_result(fail_marked)
        .service(handlers);
    let app = Router::new()
        .fallback_service(served)
        .layer(middleware::from_fn(set_principal));
    let app = if setup.compressed {
        app.layer(CompressionLayer::new())
    } else {
        app
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, Box::new(AbortOnDrop(server)))
}

/// Stops the server with the test.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
