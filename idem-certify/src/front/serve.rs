//! A server process of a front-end run: the runtime its front end wants, and what its plan
//! says to serve on it (`server`, `poem`, `salvo`, `lambda`).

use crate::args::FrontKind;
use crate::front::plan::{ServerPlan, Serves};
use crate::front::{lambda, poem, salvo, server};

/// Runs the server `plan` describes (as JSON) until it is killed.
pub(crate) fn main(plan: &str) -> Result<(), String> {
    let plan: ServerPlan =
        serde_json::from_str(plan).map_err(|error| format!("reading the plan: {error}"))?;
    match plan.serves.clone() {
        Serves::Endpoint {
            front: FrontKind::Actix,
            ..
        } => actix_web::rt::System::new().block_on(server::actix(plan)),
        Serves::Endpoint {
            front: FrontKind::Tower,
            ..
        } => tokio_runtime()?.block_on(server::tower(plan)),
        Serves::Endpoint {
            front: FrontKind::Poem,
            ..
        } => tokio_runtime()?.block_on(poem::serve(plan)),
        Serves::Endpoint {
            front: FrontKind::Salvo,
            ..
        } => tokio_runtime()?.block_on(salvo::serve(plan)),
        Serves::Endpoint {
            front: FrontKind::Lambda,
            ..
        } => tokio_runtime()?.block_on(lambda::serve(plan)),
        Serves::Downstream => tokio_runtime()?.block_on(server::downstream_service(plan)),
    }
}

fn tokio_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| format!("starting the runtime: {error}"))
}
