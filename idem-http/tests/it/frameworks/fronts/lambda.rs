//! The layer in front of a `lambda_http` function, as idem-lambda's `http` feature wraps it:
//! the function runs in this process (its invocations on this runtime), polling cargo-lambda's
//! emulator of the Lambda Runtime API, and the client reaches it through the emulator's
//! function URL, which turns each HTTP request into a function URL event and the function's
//! response back into HTTP.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use idem_http::IdempotencyLayer;
use idem_lambda::http::LambdaHttpLayer;
use idem_test_servers::lambda::TestRuntimeApi;
use lambda_http::tower::ServiceBuilder;
use lambda_http::{service_fn, Body, Error, Request, Response};
use tower_http::compression::CompressionLayer;

use crate::frameworks::fronts::Setup;
use crate::frameworks::shop::{Answer, Chunks, Shop, UserId, SERVICE_FAILS};

/// How many invocations the function runs at once: a duplicate in flight is served while the
/// first still runs, as by a second instance of the function.
const CONCURRENCY: &str = "8";

/// A Lambda answer is whole: a streamed one is read to its end first.
async fn respond(answer: Answer) -> Response<Body> {
    let (status, content_type, body) = match answer {
        Answer::Whole(status, content_type, body) => (status, content_type, body.into_bytes()),
        Answer::Streamed(chunks) => (200, "text/event-stream", whole(chunks).await),
        Answer::Failing => {
            let marked = Response::builder().status(201).header(SERVICE_FAILS, "1");
            return marked.body(Body::from("charged")).unwrap();
        }
    };
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Body::from(body))
        .unwrap()
}

async fn whole(chunks: Chunks) -> Vec<u8> {
    use futures_core::Stream;
    let mut chunks = std::pin::pin!(chunks);
    let mut body = Vec::new();
    while let Some(Ok(chunk)) = std::future::poll_fn(|cx| chunks.as_mut().poll_next(cx)).await {
        body.extend_from_slice(&chunk);
    }
    body
}

fn set_principal(mut request: Request) -> Request {
    let user = request
        .headers()
        .get("x-user")
        .and_then(|user| user.to_str().ok());
    if let Some(user) = user.map(str::to_owned) {
        request.extensions_mut().insert(UserId(user));
    }
    request
}

/// A service error for the answers the shop marks: the handler has run, and what answers
/// the client is the function's error, as after a timeout inside the layer.
fn fail_marked(answered: Result<Response<Body>, Error>) -> Result<Response<Body>, Error> {
    let response = answered?;
    if response.headers().contains_key(SERVICE_FAILS) {
        return Err("timed out".into());
    }
    Ok(response)
}

/// `lambda_runtime` reads its configuration (the Runtime API's address among it) from the
/// environment when a runtime is made: one function at a time reads its own.
static ENVIRONMENT: Mutex<()> = Mutex::new(());

/// Serves the shop; its URL, and what keeps it running.
pub async fn serve(
    shop: Arc<Shop>,
    layer: IdempotencyLayer,
    setup: Setup,
) -> (String, Box<dyn Send>) {
    let api = TestRuntimeApi::start().expect(
        "cargo-lambda, the Lambda front end's Runtime API (scripts/services.sh installs it)",
    );
    let handler = service_fn(move |request: Request| {
        let shop = shop.clone();
        async move {
            let path = request.uri().path().to_owned();
            let body = Bytes::copy_from_slice(request.body().as_ref());
            Ok::<_, Error>(respond(shop.serve(&path, body).await).await)
        }
    });
    let function = ServiceBuilder::new()
        .layer(LambdaHttpLayer::new(layer))
        .map_result(fail_marked)
        .service(handler);
    let outside = ServiceBuilder::new().map_request(set_principal);
    let polling = if setup.compressed {
        poll(
            &api,
            outside.layer(CompressionLayer::new()).service(function),
        )
    } else {
        poll(&api, outside.service(function))
    };
    let url = api.function_url("");
    (url, Box::new((polling, api)))
}

/// Runs `function` as Lambda would, polling `api` for its invocations, until the task is
/// aborted.
fn poll<S, R>(api: &TestRuntimeApi, function: S) -> AbortOnDrop
where
    S: tower::Service<Request, Response = R, Error = Error> + Clone + Send + 'static,
    S::Future: Send + 'static,
    R: lambda_http::IntoResponse + Send + Sync + 'static,
{
    let runtime = {
        let _one_at_a_time = ENVIRONMENT.lock().unwrap();
        for (name, value) in api.function_env() {
            std::env::set_var(name, value);
        }
        std::env::set_var("AWS_LAMBDA_MAX_CONCURRENCY", CONCURRENCY);
        lambda_http::runtime_concurrent(function)
    };
    AbortOnDrop(tokio::spawn(async move {
        runtime.run_concurrent().await.unwrap()
    }))
}

/// Stops the function with the test.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
