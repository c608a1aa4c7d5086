//! The tower `Layer` a `lambda_http` function is wrapped in, and the idem-http layer it is
//! made of, scoped by the principal of the request context.

use idem_core::Idempotency;
use idem_http::{IdempotencyLayer, IdempotencyLayerBuilder};
use tower_layer::Layer;

use super::handler::FunctionHandler;
use super::principal::principal_of_request;
use super::service::LambdaHttpService;

/// idem-http's [`IdempotencyLayer`] for a `lambda_http` function: wraps a service of
/// `lambda_http::Request`s (a `service_fn` of the handler) into the
/// [`LambdaHttpService`] that `lambda_http::run` takes. Made by [`layer`] with the
/// defaults, or from any `IdempotencyLayer` with [`new`](Self::new) (one from [`builder`],
/// with settings of its own).
#[derive(Clone, Debug)]
pub struct LambdaHttpLayer {
    layer: IdempotencyLayer,
}

impl LambdaHttpLayer {
    /// `layer` in front of a `lambda_http` handler. Build it with [`builder`] to scope its
    /// keys by the principal of the request context; an `IdempotencyLayer` built otherwise
    /// keeps its own scope (by default, a digest of `Authorization`).
    pub fn new(layer: IdempotencyLayer) -> Self {
        LambdaHttpLayer { layer }
    }
}

impl From<IdempotencyLayer> for LambdaHttpLayer {
    fn from(layer: IdempotencyLayer) -> Self {
        LambdaHttpLayer::new(layer)
    }
}

impl<S> Layer<S> for LambdaHttpLayer {
    type Service = LambdaHttpService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        LambdaHttpService::new(self.layer.layer(FunctionHandler::new(inner)))
    }
}

/// The layer for a `lambda_http` function on the store behind `idem`, with idem-http's
/// defaults, its keys scoped by the principal of the request context (see [`builder`]).
pub fn layer(idem: Idempotency) -> LambdaHttpLayer {
    LambdaHttpLayer::new(builder(idem).build())
}

/// idem-http's layer builder, its scope set to the principal of the request context that
/// `lambda_http` puts in each request's extensions, by [the crate's one
/// rule](crate::principal#the-rule): an authorizer's `principalId`, a JWT's `sub`, a Cognito
/// identity, an IAM ARN. Every other setting of [`IdempotencyLayerBuilder`] applies as to an
/// axum app; a keyed request without a principal is refused (400,
/// [`problem::UNSCOPED`](idem_http::problem::UNSCOPED)) unless
/// [`unscoped`](IdempotencyLayerBuilder::unscoped) says otherwise. Give what it builds to
/// [`LambdaHttpLayer::new`].
///
/// ```
/// # fn demo(idem: idem_core::Idempotency) {
/// use std::time::Duration;
///
/// let layer = idem_lambda::http::builder(idem)
///     .ttl(Duration::from_secs(3600))
///     .require_key(true)
///     .build();
/// let layer = idem_lambda::http::LambdaHttpLayer::new(layer);
/// # let _ = layer; }
/// ```
pub fn builder(idem: Idempotency) -> IdempotencyLayerBuilder {
    IdempotencyLayer::builder(idem).scope(principal_of_request)
}
