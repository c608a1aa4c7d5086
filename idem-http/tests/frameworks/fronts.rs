//! The shop behind each front end, on a real server on a free loopback port: the tower layer
//! in an axum app, and the actix-web middleware in an actix-web app, set up alike.

use std::sync::Arc;
use std::time::Duration;

use idem_core::{Idempotency, ScopeQuota};
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;

use crate::shop::{Answer, Shop, UserId};

/// Which front end serves the shop.
#[derive(Clone, Copy, Debug)]
pub enum Front {
    Tower,
    Actix,
}

/// How the layer and the app around it are set up.
#[derive(Clone, Copy, Default)]
pub struct Setup {
    /// At most this many records per principal.
    pub quota: Option<usize>,
    /// The scope is the `UserId` an authentication middleware sets, not `Authorization`.
    pub principal_from_extension: bool,
    /// A compression middleware outside the layer.
    pub compressed: bool,
    /// Duplicates wait for the first request's answer instead of a 409.
    pub duplicates_wait: bool,
    /// The largest request body the layer reads.
    pub max_request_body: Option<usize>,
}

/// How long a test waits for what must happen.
pub const HANG: Duration = Duration::from_secs(60);

/// A running server and a client for it.
pub struct Running {
    pub url: String,
    pub shop: Arc<Shop>,
    pub client: reqwest::Client,
    _stop: Option<actix_web::dev::ServerHandle>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(server) = self._stop.take() {
            drop(server.stop(false));
        }
    }
}

impl Running {
    /// A POST of `body` to `path` with `key`, as the client `Bearer shop-client`.
    pub fn post(&self, path: &str, key: &str, body: impl Into<String>) -> reqwest::RequestBuilder {
        self.client
            .post(format!("{}{path}", self.url))
            .header("idempotency-key", key)
            .header("authorization", "Bearer shop-client")
            .body(body.into())
    }
}

fn layer(setup: Setup) -> IdempotencyLayer {
    let mut idem = Idempotency::new(MemoryStore::new());
    if let Some(records) = setup.quota {
        idem = idem.with_quota(ScopeQuota::new().max_records(records));
    }
    let mut builder = IdempotencyLayer::builder(idem);
    if setup.principal_from_extension {
        builder = builder.scope_from_extension::<UserId>();
    }
    if setup.duplicates_wait {
        builder = builder.wait(HANG);
    }
    if let Some(limit) = setup.max_request_body {
        builder = builder.max_request_body(limit);
    }
    builder.build()
}

/// Serves a new shop behind `front`, set up as `setup` says.
pub async fn start(front: Front, setup: Setup) -> Running {
    let shop = Arc::new(Shop::default());
    let (url, stop) = match front {
        Front::Tower => (tower::serve(shop.clone(), layer(setup), setup).await, None),
        Front::Actix => {
            let (url, handle) = actix::serve(shop.clone(), layer(setup), setup);
            (url, Some(handle))
        }
    };
    let client = reqwest::Client::builder().timeout(HANG).build().unwrap();
    Running {
        url,
        shop,
        client,
        _stop: stop,
    }
}

mod tower {
    use super::*;
    use axum::body::{Body, Bytes};
    use axum::extract::{Request, State};
    use axum::middleware::{self, Next};
    use axum::response::Response;
    use axum::routing::post;
    use axum::Router;
    use tower_http::compression::CompressionLayer;

    fn respond(answer: Answer) -> Response {
        let (status, content_type, body) = match answer {
            Answer::Whole(status, content_type, body) => (status, content_type, Body::from(body)),
            Answer::Streamed(chunks) => (200, "text/event-stream", Body::from_stream(chunks)),
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

    pub async fn serve(shop: Arc<Shop>, layer: IdempotencyLayer, setup: Setup) -> String {
        let app = Router::new()
            .route(
                "/payments",
                post(|State(shop): State<Arc<Shop>>, body: Bytes| async move {
                    respond(shop.pay(&body))
                }),
            )
            .route(
                "/held",
                post(|State(shop): State<Arc<Shop>>, body: Bytes| async move {
                    respond(shop.held(&body).await)
                }),
            )
            .route(
                "/events",
                post(|State(shop): State<Arc<Shop>>| async move { respond(shop.events()) }),
            )
            .route(
                "/panics",
                post(|State(shop): State<Arc<Shop>>| async move { respond(shop.panics()) }),
            )
            .with_state(shop)
            .layer(layer)
            .layer(middleware::from_fn(set_principal));
        let app = if setup.compressed {
            app.layer(CompressionLayer::new())
        } else {
            app
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    }
}

mod actix {
    use super::*;
    use actix_web::dev::{ServerHandle, Service};
    use actix_web::middleware::{Compress, Condition};
    use actix_web::web::{self, Bytes, Data};
    use actix_web::{App, HttpMessage, HttpResponse};

    fn respond(answer: Answer) -> HttpResponse {
        match answer {
            Answer::Whole(status, content_type, body) => {
                HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap())
                    .content_type(content_type)
                    .body(body)
            }
            Answer::Streamed(chunks) => HttpResponse::Ok()
                .content_type("text/event-stream")
                .streaming(chunks),
        }
    }

    /// Serves the shop on an actix-web server of one worker, on a thread of its own.
    pub fn serve(shop: Arc<Shop>, layer: IdempotencyLayer, setup: Setup) -> (String, ServerHandle) {
        actix_serve!(1, move || {
            App::new()
                .app_data(Data::from(shop.clone()))
                .route(
                    "/payments",
                    web::post().to(|shop: Data<Shop>, body: Bytes| async move {
                        respond(shop.pay(&body))
                    }),
                )
                .route(
                    "/held",
                    web::post().to(|shop: Data<Shop>, body: Bytes| async move {
                        respond(shop.held(&body).await)
                    }),
                )
                .route(
                    "/events",
                    web::post()
                        .to(|shop: Data<Shop>| async move { respond(shop.into_inner().events()) }),
                )
                .route(
                    "/panics",
                    web::post().to(|shop: Data<Shop>| async move { respond(shop.panics()) }),
                )
                .wrap(layer.clone())
                .wrap_fn(|request, service| {
                    let user = request
                        .headers()
                        .get("x-user")
                        .and_then(|user| user.to_str().ok());
                    if let Some(user) = user.map(str::to_owned) {
                        request.extensions_mut().insert(UserId(user));
                    }
                    service.call(request)
                })
                .wrap(Condition::new(setup.compressed, Compress::default()))
        })
    }
}
