//! The certified endpoint behind idem-http's poem middleware (`--front poem`): a poem
//! endpoint, the layer around it with `EndpointExt::with`, a middleware inside the layer that
//! turns a response the handler marks as its service's failure into a `poem::Error` (a
//! failure after the handler began, for which the layer holds the key), and one outside it
//! that names each attempt and writes what the layer answered it.

use poem::endpoint::make;
use poem::http::{HeaderValue, StatusCode};
use poem::listener::TcpAcceptor;
use poem::{Endpoint as _, EndpointExt, IntoResponse, Request, Response, Server};

use crate::front::endpoint::{Endpoint, Handled};
use crate::front::plan::ServerPlan;
use crate::front::served::{ATTEMPT, EXECUTION};
use crate::front::server::{announce, asked, endpoint, execution_of, SERVICE_FAILED};

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
                let why = "the service failed after the handler began";
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
                let attempt = served.next();
                let value = HeaderValue::from_str(&attempt).expect("an attempt's id is ASCII");
                request.headers_mut().insert(ATTEMPT, value);
                let response = match inner.call(request).await {
                    Ok(response) => response.into_response(),
                    Err(error) => error.into_response(),
                };
                served.record(attempt, response.status().as_u16(), |name| {
                    let value = response.headers().get(name)?.to_str().ok()?;
                    Some(value.to_owned())
                });
                Ok::<_, poem::Error>(response)
            }
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|error| error.to_string())?;
    announce(listener.local_addr().map_err(|error| error.to_string())?)?;
    let acceptor = TcpAcceptor::from_tokio(listener).map_err(|error| error.to_string())?;
    Server::new_with_acceptor(acceptor)
        .run(app)
        .await
        .map_err(|error| error.to_string())
}

/// The handler's answer to `request`, as a poem response.
async fn order(endpoint: &Endpoint, request: Request) -> Response {
    let asked = asked(|name| {
        let value = request.headers().get(name)?.to_str().ok()?;
        Some(value.to_owned())
    });
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
