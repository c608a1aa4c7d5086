//! The certified endpoint as a `lambda_http` function behind idem-lambda's layer (`--front
//! lambda`): a function process polls the run's Lambda Runtime API (cargo-lambda's emulator)
//! for its invocations, which callers make through the emulator's function URL.
//!
//! Around the handler, from the outside in:
//! - each attempt named, and what the layer answered it written (as `served::tower` does);
//! - an authorizer's stand-in (`authorizer`): the emulator's function URL carries none (one
//!   with `AWS_IAM` auth carries `authorizer.iam.userArn`), so the caller's bearer token is
//!   put in the request context as a Lambda authorizer's `principalId`, an IAM user's ARN or
//!   a JWT's `sub`, by principal, which idem-lambda's layer scopes the keys by;
//! - idem-lambda's `LambdaHttpLayer`, on idem-lambda's builder (the request context's
//!   principal);
//! - a response the handler marks as its service's failure made the function's error, a
//!   failure after the handler began, for which the layer holds the key (the function URL
//!   answers it as a 500).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use idem_lambda::http::LambdaHttpLayer;
use lambda_http::http::StatusCode;
use lambda_http::tower::{Service, ServiceBuilder};
use lambda_http::{service_fn, Body, Error, Request, Response};

use crate::front::authorizer::authorize;
use crate::front::endpoint::{Endpoint, Handled};
use crate::front::plan::ServerPlan;
use crate::front::served::{Served, EXECUTION};
use crate::front::server::{
    asked_in, endpoint, execution_of, FAILED_AFTER_BEGINNING, SERVICE_FAILED,
};

/// How many invocations a function process runs at once: several, as the servers of the
/// other front ends serve several requests at once.
const CONCURRENCY: &str = "8";

/// The environment of a function process polling `runtime_api` (`http://HOST:PORT/.rt`): what
/// `lambda_runtime` reads when it starts, as Lambda gives it, and how many invocations at once.
pub(crate) fn environment(runtime_api: &str) -> impl Iterator<Item = (&'static str, String)> {
    let concurrency = ("AWS_LAMBDA_MAX_CONCURRENCY", CONCURRENCY.to_owned());
    idem_test_servers::lambda::function_env(runtime_api)
        .into_iter()
        .chain([concurrency])
}

/// Runs the function until killed, polling the Runtime API of its environment.
pub(crate) async fn serve(plan: ServerPlan) -> Result<(), String> {
    let (layer, endpoint, served) = endpoint(&plan).await?;
    let handler = service_fn(move |request: Request| {
        let endpoint = endpoint.clone();
        async move { Ok::<_, Error>(order(&endpoint, request).await) }
    });
    let function = ServiceBuilder::new()
        .map_request(authorize)
        .layer(LambdaHttpLayer::new(layer))
        .map_result(fail_marked)
        .service(handler);
    let function = RecordServed {
        served,
        inner: function,
    };
    // The store is reached and the layer built: what the coordinator waits for. The process
    // listens on no port of its own; it names the Runtime API it polls.
    let polled = std::env::var("AWS_LAMBDA_RUNTIME_API")
        .map_err(|_| "no AWS_LAMBDA_RUNTIME_API to poll".to_owned())?;
    crate::listening::announce(&polled).map_err(|error| error.to_string())?;
    lambda_http::run_concurrent(function)
        .await
        .map_err(|error| format!("the function stopped: {error}"))
}

/// The handler's answer to `request`, as a `lambda_http` response.
async fn order(endpoint: &Endpoint, request: Request) -> Response<Body> {
    let asked = asked_in(request.headers());
    let body = String::from_utf8_lossy(request.body().as_ref()).into_owned();
    let response = Response::builder().header("content-type", "text/plain");
    let response = match endpoint.handle(&asked, &body).await {
        Handled::Created(answer) => response
            .status(StatusCode::CREATED)
            .header(EXECUTION, execution_of(&answer))
            .body(Body::Text(answer)),
        Handled::Unavailable(why) => response
            .status(StatusCode::SERVICE_UNAVAILABLE)
            .body(Body::Text(why)),
        Handled::ServiceError(why) => response
            .status(StatusCode::SERVICE_UNAVAILABLE)
            .header(SERVICE_FAILED, "1")
            .body(Body::Text(why)),
    };
    response.expect("a response of valid parts")
}

/// Inside the layer: a response marked as its service's failure becomes the function's error.
fn fail_marked(answered: Result<Response<Body>, Error>) -> Result<Response<Body>, Error> {
    let response = answered?;
    if response.headers().contains_key(SERVICE_FAILED) {
        return Err(FAILED_AFTER_BEGINNING.into());
    }
    Ok(response)
}

/// Outside the layer: each attempt named, and what the layer answered it written (a function
/// error, which the function URL answers as a 500, is written by no one: as under actix-web).
#[derive(Clone)]
struct RecordServed<S> {
    served: Arc<Served>,
    inner: S,
}

/// What [`RecordServed`] answers: the function's response, or its error.
type Answered = Pin<Box<dyn Future<Output = Result<Response<Body>, Error>> + Send>>;

impl<S> Service<Request> for RecordServed<S>
where
    S: Service<Request, Response = Response<Body>, Error = Error>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Error;
    type Future = Answered;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Answered {
        let attempt = self.served.name(request.headers_mut());
        let (served, answered) = (self.served.clone(), self.inner.call(request));
        Box::pin(async move {
            let response = answered.await?;
            served.answered(attempt, response.status().as_u16(), response.headers());
            Ok(response)
        })
    }
}
