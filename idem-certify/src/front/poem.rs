//! The certified endpoint behind idem-http's poem middleware (`--front poem`): a poem
//! endpoint, the layer around it with `EndpointExt::with`, a middleware inside the layer that
//! turns a response the handler marks as its service's failure into a `poem::Error` (a
//! failure after the handler began, for which the layer holds the key), and one outside it
//! that names each attempt and writes what the layer answered it.

use poem::endpoint::make;
use poem::http::StatusCode;
use poem::listener::TcpAcceptor;
use poem::{Endpoint as _, EndpointExt, IntoResponse, Request, Response, Server};

use crate::front::endpoint::{Endpoint, Handled};
use crate::front::plan::ServerPlan;
use crate::front::served::EXECUTION;
use crate::front::server::{
    asked_in, endpoint, execution_of, listen, FAILED_AFTER_BEGINNING, SERVICE_FAILED,
};

/// Serves the endpoint behind poem until killed.
pub(crate) async fn serve(plan: ServerPlan) -> Result<(), String> {
    let (layer, endpoint, served) = endpoint(&plan).await?;
    let handler = make(move |request: Request| {
        let endpoint = endpoint.clone();
        async move { order(&endpoint, request).await }
    });
    let app = handler
        // Inside the layer: a response marked as its service's failure becomes that failure.
        .around(|inner, request| async move {
            let response = inner.call(request).await?.into_response();
            if response.headers().contains_key(SERVICE_FAILED) {
                let why = FAILED_AFTER_BEGINNING;
                return Err(poem::Error::from_string(
                    why,
                    StatusCode::SERVICE_UNAVAILABLE,
                ));
            }
            Ok(response)
        })
        .with(layer)
        // Outside the layer: each attempt named, and what the layer answered it written.
        .around(move |inner, mut request| {
            let served = served.clone();
            async move {
                let attempt = served.name(request.headers_mut());
                let response = match inner.call(request).await {
                    Ok(response) => response.into_response(),
                    Err(error) => error.into_response(),
                };
                served.answered(attempt, response.status().as_u16(), response.headers());
                Ok::<_, poem::Error>(response)
            }
        });
    let acceptor = TcpAcceptor::from_tokio(listen().await?).map_err(|error| error.to_string())?;
    Server::new_with_acceptor(acceptor)
        .run(app)
        .await
        .map_err(|error| error.to_string())
}

/// The handler's answer to `request`, as a poem response.
async fn order(endpoint: &Endpoint, request: Request) -> Response {
    let asked = asked_in(request.headers());
    let body = match request.into_body().into_string().await {
        Ok(body) => body,
        Err(error) => return (StatusCode::BAD_REQUEST, error.to_string()).into_response(),
    };
    match endpoint.handle(&asked, &body).await {
        Handled::Created(answer) => Response::builder()
            .status(StatusCode::CREATED)
            .header(EXECUTION, execution_of(&answer))
            .body(answer),
        Handled::Unavailable(why) => (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
        Handled::ServiceError(why) => Response::builder()
            .status(StatusCode::SERVICE_UNAVAILABLE)
            .header(SERVICE_FAILED, "1")
            .body(why),
    }
}
