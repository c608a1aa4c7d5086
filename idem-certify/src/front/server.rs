//! What a server process of a front-end run serves: the certified endpoint behind the tower
//! layer (axum) or actix-web's middleware on the run's store (poem's, salvo's and the Lambda
//! function's in modules of their own, from the same pieces here), or the downstream service
//! behind its own layer on a memory store. Each prints `listening ADDRESS` once it serves,
//! then serves until killed.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use idem_client::reqwest_middleware::ClientBuilder;
use idem_client::IdempotentRetry;
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;

use crate::args::FrontKind;
use crate::check::front::model::Charge;
use crate::connect::connect;
use crate::front::endpoint::{Asked, Downstream, Endpoint, Handled};
use crate::front::lines::JsonLines;
use crate::front::plan::{ServerPlan, Serves, CHARGES, ORDERS, REQUEST};
use crate::front::served::{self, header_text, Served, ATTEMPT, EXECUTION};
use crate::history::{now_micros, HistoryWriter};
use crate::plan::StoreSpec;

/// How long a server may take to reach its store and listen: past it, it gives up, and the
/// coordinator, which waits for its `listening` line, reads its end instead of hanging.
const STARTUP: Duration = Duration::from_secs(30);

/// The layer on the run's store, the endpoint behind it, and the record of the attempts
/// around it, within [`STARTUP`].
pub(super) async fn endpoint(
    plan: &ServerPlan,
) -> Result<(IdempotencyLayer, Arc<Endpoint>, Arc<Served>), String> {
    let Serves::Endpoint {
        front,
        store,
        downstream,
        contexts,
        served,
        ..
    } = plan.serves.clone()
    else {
        return Err("not an endpoint's plan".to_owned());
    };
    let (layer, endpoint) = tokio::time::timeout(
        STARTUP,
        serve_on(plan, front, &store, downstream, &contexts),
    )
    .await
    .map_err(|_| format!("the store was not reached within {STARTUP:?}"))??;
    let served = Served::new(plan.name.clone(), JsonLines::create(&served)?);
    Ok((layer, endpoint, served))
}

/// The layer on `store` (scoped as idem-lambda scopes them for a Lambda function) and the
/// endpoint behind it, writing its executions to the plan's history and its call contexts
/// to `contexts`, charging at `downstream` if there is one.
async fn serve_on(
    plan: &ServerPlan,
    front: FrontKind,
    store: &StoreSpec,
    downstream: Option<String>,
    contexts: &Path,
) -> Result<(IdempotencyLayer, Arc<Endpoint>), String> {
    let lease = Duration::from_millis(plan.lease_ms);
    let idem = Idempotency::from_arc(connect(store).await?);
    // A Lambda function's keys are scoped as idem-lambda scopes them: by the principal of the
    // request context, which the authorizer in front of the function names.
    let builder = match front {
        FrontKind::Lambda => idem_lambda::http::builder(idem),
        _ => IdempotencyLayer::builder(idem),
    };
    let layer = builder.lease(lease).build();
    let history = HistoryWriter::create(&plan.history)
        .map_err(|error| format!("opening {}: {error}", plan.history.display()))?;
    let downstream = match downstream {
        Some(base) => Some(Downstream {
            client: downstream_client(lease)?,
            url: format!("{base}{CHARGES}"),
        }),
        None => None,
    };
    let contexts = JsonLines::create(contexts)?;
    let endpoint = Endpoint::new(plan.name.clone(), history, contexts, downstream, lease);
    Ok((layer, Arc::new(endpoint)))
}

/// The client the endpoint charges through: idem-client's retries, within the lease's reach.
fn downstream_client(
    lease: Duration,
) -> Result<idem_client::reqwest_middleware::ClientWithMiddleware, String> {
    let http = idem_client::reqwest::Client::builder()
        .timeout(lease * 2)
        .build()
        .map_err(|error| error.to_string())?;
    let retry = IdempotentRetry::builder()
        .backoff(Duration::from_millis(20), Duration::from_millis(200))
        .max_elapsed(lease * 3)
        .build();
    Ok(ClientBuilder::new(http).with(retry).build())
}

/// Tells the coordinator where this server listens.
fn announce(address: SocketAddr) -> Result<(), String> {
    crate::listening::announce(address).map_err(|error| error.to_string())
}

/// A listener on a free loopback port, which the coordinator is told of.
pub(super) async fn listen() -> Result<tokio::net::TcpListener, String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|error| error.to_string())?;
    announce(listener.local_addr().map_err(|error| error.to_string())?)?;
    Ok(listener)
}

/// What a request with `headers` asks, by [`asked`].
pub(super) fn asked_in(headers: &HeaderMap) -> Asked {
    asked(|name| header_text(headers, name))
}

/// The principal (a bearer token), the key, the caller's id and the attempt of a request,
/// `header` reading its headers.
fn asked(header: impl Fn(&str) -> Option<String>) -> Asked {
    let principal = header("authorization")
        .map(|value| value.trim_start_matches("Bearer ").to_owned())
        .unwrap_or_default();
    let key = header(idem_client::IDEMPOTENCY_KEY.as_str()).unwrap_or_default();
    let request = header(REQUEST).unwrap_or_default();
    let attempt = header(ATTEMPT).unwrap_or_default();
    Asked {
        principal,
        key,
        request,
        attempt,
    }
}

/// Serves the endpoint behind the tower layer, in an axum router, until killed.
pub(super) async fn tower(plan: ServerPlan) -> Result<(), String> {
    let (layer, endpoint, served) = endpoint(&plan).await?;
    let app = Router::new()
        .route(ORDERS, post(tower_order))
        .with_state(endpoint)
        .layer(layer)
        .layer(axum::middleware::from_fn_with_state(served, served::tower));
    serve_axum(app).await
}

async fn serve_axum(app: Router) -> Result<(), String> {
    axum::serve(listen().await?, app)
        .await
        .map_err(|error| error.to_string())
}

async fn tower_order(
    State(endpoint): State<Arc<Endpoint>>,
    headers: HeaderMap,
    body: String,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    match endpoint.handle(&asked_in(&headers), &body).await {
        Handled::Created(answer) => {
            let execution = execution_of(&answer);
            (StatusCode::CREATED, [(EXECUTION, execution)], answer).into_response()
        }
        Handled::Unavailable(why) | Handled::ServiceError(why) => {
            (StatusCode::SERVICE_UNAVAILABLE, why).into_response()
        }
    }
}

/// Serves the endpoint behind actix-web's middleware until killed. Its header types are
/// actix-web's own, not the `http` crate's the other front ends share: read by closures.
pub(super) async fn actix(plan: ServerPlan) -> Result<(), String> {
    use actix_web::dev::Service as _;
    use actix_web::{web, App, HttpServer};
    let (layer, endpoint, served) = endpoint(&plan).await?;
    let server = HttpServer::new(move || {
        let served = served.clone();
        App::new()
            .app_data(web::Data::from(endpoint.clone()))
            // Inside the layer (the last `wrap` is the outermost): a handler's response marked
            // as its service's failure becomes that failure, an `Err` after the handler began.
            .wrap_fn(|request, service| {
                let served = service.call(request);
                async move {
                    let response = served.await?;
                    if response.headers().contains_key(SERVICE_FAILED) {
                        let why = FAILED_AFTER_BEGINNING;
                        return Err(actix_web::error::ErrorServiceUnavailable(why));
                    }
                    Ok(response)
                }
            })
            .wrap(layer.clone())
            // Outside the layer: each attempt named, and what the layer answered it written.
            .wrap_fn(move |mut request, service| {
                use actix_web::http::header::{HeaderName, HeaderValue};
                let attempt = served.next();
                let value = HeaderValue::from_str(&attempt).expect("an attempt's id is ASCII");
                request
                    .headers_mut()
                    .insert(HeaderName::from_static(ATTEMPT), value);
                let (served, answered) = (served.clone(), service.call(request));
                async move {
                    let response = answered.await?;
                    served.record(attempt, response.status().as_u16(), |name| {
                        let value = response.headers().get(name)?.to_str().ok()?;
                        Some(value.to_owned())
                    });
                    Ok(response)
                }
            })
            .route(ORDERS, web::post().to(actix_order))
    })
    .workers(2)
    .disable_signals()
    .bind(("127.0.0.1", 0))
    .map_err(|error| error.to_string())?;
    announce(server.addrs()[0])?;
    server.run().await.map_err(|error| error.to_string())
}

/// The execution an answer names (its first part).
pub(super) fn execution_of(answer: &str) -> String {
    answer.split('|').next().unwrap_or_default().to_owned()
}

/// The header by which the handler asks the middleware inside the layer to fail.
pub(super) const SERVICE_FAILED: &str = "x-certify-service-failed";
/// The failure the middleware inside the layer gives for a response marked [`SERVICE_FAILED`].
pub(super) const FAILED_AFTER_BEGINNING: &str = "the service failed after the handler began";

async fn actix_order(
    endpoint: actix_web::web::Data<Endpoint>,
    request: actix_web::HttpRequest,
    body: String,
) -> actix_web::HttpResponse {
    use actix_web::HttpResponse;
    let asked = asked(|name| {
        let value = request.headers().get(name)?.to_str().ok()?;
        Some(value.to_owned())
    });
    match endpoint.handle(&asked, &body).await {
        Handled::Created(answer) => HttpResponse::Created()
            .insert_header((EXECUTION, execution_of(&answer)))
            .body(answer),
        Handled::Unavailable(why) => HttpResponse::ServiceUnavailable().body(why),
        Handled::ServiceError(why) => HttpResponse::ServiceUnavailable()
            .insert_header((SERVICE_FAILED, "1"))
            .body(why),
    }
}

/// The downstream service's charges: one line in its history per charge its handler makes,
/// with the order it was asked for and the key it was asked under.
struct Charges {
    history: JsonLines,
    made: AtomicU64,
}

pub(super) async fn downstream_service(plan: ServerPlan) -> Result<(), String> {
    let history = JsonLines::create(&plan.history)?;
    let layer = IdempotencyLayer::builder(Idempotency::new(MemoryStore::new()))
        .lease(Duration::from_millis(plan.lease_ms))
        .build();
    let charges = Arc::new(Charges {
        history,
        made: AtomicU64::new(0),
    });
    let app = Router::new()
        .route(CHARGES, post(charge))
        .with_state(charges)
        .layer(layer);
    serve_axum(app).await
}

async fn charge(
    State(charges): State<Arc<Charges>>,
    headers: HeaderMap,
    order: String,
) -> (StatusCode, String) {
    let call = format!(
        "downstream:{}",
        charges.made.fetch_add(1, Ordering::Relaxed)
    );
    let key = headers
        .get(idem_client::IDEMPOTENCY_KEY)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    charges.history.write(&Charge {
        call: call.clone(),
        order: order.clone(),
        key,
        t: now_micros(),
    });
    // The charge takes a while, most of an execution's time without a pause, so that the
    // kills and stops of the servers that send it land while it runs.
    tokio::time::sleep(Duration::from_millis(fastrand::u64(200..800))).await;
    // The answer names the charge and its order, which the caller's answer carries on.
    (StatusCode::CREATED, format!("{call}@{order}"))
}
