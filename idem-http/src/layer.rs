//! The tower `Layer`.

use std::sync::Arc;

use idem_core::Idempotency;
use tower_layer::Layer;

use crate::builder::IdempotencyLayerBuilder;
use crate::config::Config;
use crate::service::IdempotencyService;

/// Makes POST and PATCH requests that carry an `Idempotency-Key` header idempotent: see the
/// [crate docs](crate) for what it answers when.
#[derive(Clone, Debug)]
pub struct IdempotencyLayer {
    pub(crate) config: Arc<Config>,
}

impl IdempotencyLayer {
    /// The layer with the defaults, on the store behind `idem`.
    pub fn new(idem: Idempotency) -> Self {
        Self::builder(idem).build()
    }

    /// A builder for a layer with other settings.
    pub fn builder(idem: Idempotency) -> IdempotencyLayerBuilder {
        IdempotencyLayerBuilder::new(idem)
    }

    /// This layer's contract, read from its settings, to put into the OpenAPI document of the
    /// routes behind it: see [`openapi`](crate::openapi).
    #[cfg(any(feature = "openapi", feature = "openapi-utoipa6"))]
    #[cfg_attr(
        docsrs,
        doc(cfg(any(feature = "openapi", feature = "openapi-utoipa6")))
    )]
    pub fn openapi(&self) -> crate::openapi::IdempotencyContract {
        crate::openapi::IdempotencyContract::of(self.config.clone())
    }
}

impl<S> Layer<S> for IdempotencyLayer {
    type Service = IdempotencyService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        IdempotencyService {
            inner,
            config: self.config.clone(),
        }
    }
}
