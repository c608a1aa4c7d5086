//! A server process of a front-end run: the runtime its front end wants, and what its plan
//! says to serve on it (`server`, `poem`, `salvo`, `lambda`).

use crate::args::FrontKind;
use crate::front::plan::{ServerPlan, Serves};
use crate::front::{lambda, poem, salvo, server};

/// Runs the server `plan` describes (as JSON) until it is killed.
pub(crate) fn main(plan: &str) -> Result<(), String> {
    let plan: ServerPlan =
        serde_json::from_str(plan).map_err(|error| format!("reading the plan: {error}"))?;
    let front = match &plan.serves {
        Serves::Endpoint { front, .. } => Some(*front),
        Serves::Downstream => None,
    };
    match front {
        Some(FrontKind::Actix) => actix_web::rt::System::new().block_on(server::actix(plan)),
        Some(FrontKind::Tower) => tokio_runtime()?.block_on(server::tower(plan)),
        Some(FrontKind::Poem) => tokio_runtime()?.block_on(poem::serve(plan)),
        Some(FrontKind::Salvo) => tokio_runtime()?.block_on(salvo::serve(plan)),
        Some(FrontKind::Lambda) => tokio_runtime()?.block_on(lambda::serve(plan)),
        None => tokio_runtime()?.block_on(server::downstream_service(plan)),
    }
}

/// The tokio runtime of a server process: two worker threads, as actix-web's servers have
/// two workers, since several servers share the machine.
fn tokio_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| format!("starting the runtime: {error}"))
}
