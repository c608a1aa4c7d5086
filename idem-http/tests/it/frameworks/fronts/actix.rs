//! The actix-web middleware in an actix-web app.

use std::sync::Arc;

use actix_web::dev::Service;
use actix_web::middleware::{Compress, Condition};
use actix_web::web::{self, Bytes, Data};
use actix_web::{App, HttpMessage, HttpRequest, HttpResponse};
use idem_http::{IdempotencyLayer, IdempotencyLayerBuilder};

use crate::frameworks::fronts::Setup;
use crate::frameworks::shop::{Answer, Shop, UserId, SERVICE_FAILS};

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
        Answer::Failing => HttpResponse::Created()
            .insert_header((SERVICE_FAILS, "1"))
            .body("charged"),
    }
}

/// The application's own reading of the `UserId` its authentication middleware sets.
pub fn principal_by_closure(builder: IdempotencyLayerBuilder) -> IdempotencyLayerBuilder {
    builder.actix_scope(|request| Some(request.extensions().get::<UserId>()?.to_string()))
}

/// Serves the shop on an actix-web server of one worker, on a thread of its own; its URL, and
/// what stops it when dropped.
pub fn serve(shop: Arc<Shop>, layer: IdempotencyLayer, setup: Setup) -> (String, Box<dyn Send>) {
    let (url, handle) = actix_serve!(1, move || {
        App::new()
            .app_data(Data::from(shop.clone()))
            .default_service(web::post().to(
                |shop: Data<Shop>, request: HttpRequest, body: Bytes| async move {
                    respond(shop.into_inner().serve(request.path(), body).await)
                },
            ))
            // Inside the layer: the answers the shop marks fail once the handler has run.
            .wrap_fn(|request, service| {
                let answered = service.call(request);
                async move {
                    let response = answered.await?;
                    if response.headers().contains_key(SERVICE_FAILS) {
                        return Err(actix_web::error::ErrorGatewayTimeout("timed out"));
                    }
                    Ok(response)
                }
            })
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
    });
    (url, Box::new(StopOnDrop(handle)))
}

/// Stops the server with the test.
struct StopOnDrop(actix_web::dev::ServerHandle);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        drop(self.0.stop(false));
    }
}
