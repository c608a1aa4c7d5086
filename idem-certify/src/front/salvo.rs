//! The certified endpoint behind idem-http's salvo hoop (`--front salvo`): the handler as the
//! route's goal, the layer hooped before it, a hoop inside the layer that renders a
//! `StatusError` (5xx) on a response the handler marks as its service's failure (a failure
//! after the handler began, for which the layer holds the key), and one outside it that names
//! each attempt and writes what the layer answered it.

use std::sync::Arc;

use salvo::conn::tcp::TcpAcceptor;
use salvo::http::{StatusCode, StatusError};
use salvo::prelude::*;

use crate::front::endpoint::{Endpoint, Handled};
use crate::front::plan::{ServerPlan, ORDERS};
use crate::front::served::{Served, EXECUTION};
use crate::front::server::{
    asked_in, endpoint, execution_of, listen, FAILED_AFTER_BEGINNING, SERVICE_FAILED,
};

/// Serves the endpoint behind salvo until killed.
pub(crate) async fn serve(plan: ServerPlan) -> Result<(), String> {
    let (layer, endpoint, served) = endpoint(&plan).await?;
    let router = Router::new()
        .hoop(RecordServed(served))
        .hoop(layer)
        .hoop(fail_marked)
        .push(Router::with_path(ORDERS.trim_start_matches('/')).post(Order(endpoint)));
    let acceptor = TcpAcceptor::try_from(listen().await?).map_err(|error| error.to_string())?;
    Server::new(acceptor)
        .try_serve(Service::new(router))
        .await
        .map_err(|error| error.to_string())
}

/// The route's goal: the handler's answer.
struct Order(Arc<Endpoint>);

#[salvo::async_trait]
impl Handler for Order {
    async fn handle(
        &self,
        request: &mut Request,
        _: &mut Depot,
        response: &mut Response,
        _: &mut FlowCtrl,
    ) {
        let asked = asked_in(request.headers());
        let body = match request.payload().await {
            Ok(body) => String::from_utf8_lossy(body).into_owned(),
            Err(error) => {
                response.status_code(StatusCode::BAD_REQUEST);
                response.body(error.to_string());
                return;
            }
        };
        let (status, why) = match self.0.handle(&asked, &body).await {
            Handled::Created(answer) => {
                let execution = execution_of(&answer);
                response.status_code(StatusCode::CREATED);
                let _ = response.add_header(EXECUTION, execution, true);
                response.body(answer);
                return;
            }
            Handled::Unavailable(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
            Handled::ServiceError(why) => {
                let _ = response.add_header(SERVICE_FAILED, "1", true);
                (StatusCode::SERVICE_UNAVAILABLE, why)
            }
        };
        response.status_code(status);
        response.body(why);
    }
}

/// Inside the layer: a response marked as its service's failure becomes salvo's error, a
/// `StatusError` with a server-error status.
#[handler]
async fn fail_marked(
    request: &mut Request,
    depot: &mut Depot,
    response: &mut Response,
    ctrl: &mut FlowCtrl,
) {
    ctrl.call_next(request, depot, response).await;
    if response.headers_mut().remove(SERVICE_FAILED).is_some() {
        response.render(StatusError::service_unavailable().brief(FAILED_AFTER_BEGINNING));
    }
}

/// Outside the layer: each attempt named, and what the layer answered it written.
struct RecordServed(Arc<Served>);

#[salvo::async_trait]
impl Handler for RecordServed {
    async fn handle(
        &self,
        request: &mut Request,
        depot: &mut Depot,
        response: &mut Response,
        ctrl: &mut FlowCtrl,
    ) {
        let attempt = self.0.name(request.headers_mut());
        ctrl.call_next(request, depot, response).await;
        let status = response.status_code.unwrap_or(StatusCode::OK);
        self.0
            .answered(attempt, status.as_u16(), response.headers());
    }
}
