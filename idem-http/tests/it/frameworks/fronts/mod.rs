//! The shop behind each front end, on a real server on a free loopback port, set up alike:
//! every front end routes each `POST` to [`Shop::serve`](crate::frameworks::shop::Shop::serve), with an
//! authentication middleware outside the layer (the `x-user` header as a [`UserId`]), and a
//! middleware inside it that fails `/fails` with the framework's own service error once its
//! handler has answered, as a timeout inside the layer would.

pub mod actix;
pub mod lambda;
pub mod poem;
pub mod salvo;
pub mod tower;

use std::sync::Arc;
use std::time::Duration;

use idem_core::{Idempotency, ScopeQuota};
use idem_http::{IdempotencyLayer, IdempotencyLayerBuilder, Unscoped};
use idem_stores::memory::MemoryStore;

use crate::frameworks::shop::{Shop, UserId};

/// Which front end serves the shop.
#[derive(Clone, Copy, Debug)]
pub enum Front {
    Tower,
    Actix,
    Poem,
    Salvo,
    Lambda,
}

/// Every front end, the first the one the others are compared with.
pub const FRONTS: &[Front] = &[
    Front::Tower,
    Front::Actix,
    Front::Poem,
    Front::Salvo,
    Front::Lambda,
];

impl Front {
    /// Whether this front end can be served here: the Lambda one needs cargo-lambda's Runtime
    /// API, and says why it is left out without it (with `IDEM_REQUIRE_BACKENDS=1`, fails).
    pub fn available(self) -> bool {
        match self {
            Front::Lambda => idem_test_servers::lambda::installed(),
            _ => true,
        }
    }
}

/// How the layer and the app around it are set up.
#[derive(Clone, Copy, Default)]
pub struct Setup {
    /// At most this many records per principal.
    pub quota: Option<usize>,
    /// The scope is the `UserId` an authentication middleware sets, not `Authorization`.
    pub principal_from_extension: bool,
    /// The scope is read by the application's own closure from the `UserId` extension, and a
    /// request without one shares the anonymous key space.
    pub principal_from_closure: bool,
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
    _server: Box<dyn Send>,
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

/// The layer as the application sets it up on `front`.
fn layer(front: Front, setup: Setup) -> IdempotencyLayer {
    let mut idem = Idempotency::new(MemoryStore::new());
    if let Some(records) = setup.quota {
        idem = idem.with_quota(ScopeQuota::new().max_records(records));
    }
    let mut builder = IdempotencyLayer::builder(idem);
    if setup.principal_from_extension {
        builder = builder.scope_from_extension::<UserId>();
    }
    if setup.principal_from_closure {
        builder = principal_by_closure(front, builder).unscoped(Unscoped::Shared);
    }
    if setup.duplicates_wait {
        builder = builder.wait(HANG);
    }
    if let Some(limit) = setup.max_request_body {
        builder = builder.max_request_body(limit);
    }
    builder.build()
}

/// The application's own closure reading the `UserId`, as the front end's request shows it.
fn principal_by_closure(front: Front, builder: IdempotencyLayerBuilder) -> IdempotencyLayerBuilder {
    match front {
        Front::Actix => actix::principal_by_closure(builder),
        _ => builder.scope(|parts| Some(parts.extensions.get::<UserId>()?.to_string())),
    }
}

/// Serves a new shop behind `front`, set up as `setup` says.
pub async fn start(front: Front, setup: Setup) -> Running {
    let shop = Arc::new(Shop::default());
    let layer = layer(front, setup);
    let (url, server): (String, Box<dyn Send>) = match front {
        Front::Tower => tower::serve(shop.clone(), layer, setup).await,
        Front::Actix => actix::serve(shop.clone(), layer, setup),
        Front::Poem => poem::serve(shop.clone(), layer, setup).await,
        Front::Salvo => salvo::serve(shop.clone(), layer, setup).await,
        Front::Lambda => lambda::serve(shop.clone(), layer, setup).await,
    };
    let client = reqwest::Client::builder().timeout(HANG).build().unwrap();
    Running {
        url,
        shop,
        client,
        _server: server,
    }
}
