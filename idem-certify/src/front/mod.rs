//! Certification of the HTTP front ends (`--front tower|actix|poem|salvo|lambda`): idem-http's
//! layer in server processes on a real store, called through idem-client while the servers
//! are killed and stopped and the network between callers, servers, the store and a
//! downstream service misbehaves.
//!
//! - `plan`: what a server process is told to serve.
//! - `serve`: a server process, started from this binary: it serves what its plan says.
//! - `server`: the endpoint behind the tower layer (axum) or actix-web's middleware, or the
//!   downstream service behind its own layer; `poem`, `salvo` and `lambda`: the endpoint
//!   behind poem's middleware, salvo's hoop, and idem-lambda's layer as a `lambda_http`
//!   function.
//! - `authorizer`: the Lambda function's stand-in for an authorizer, naming each principal
//!   as a different kind of authorizer would.
//! - `runtime_api`: the Lambda Runtime API the function processes poll (cargo-lambda's
//!   emulator), and its function URL, which callers send to.
//! - `endpoint`: the handler itself, the same on every front end: two steps, each a side
//!   effect written to the server's history, the first a charge at the downstream service
//!   with `--downstream`.
//! - `lines`: the run's own histories of JSON lines (requests, call contexts, charges).
//! - `served`: the middleware around the layer that names each attempt and writes what it
//!   was answered.
//! - `process`: server processes started from this binary, killed, stopped and resumed.
//! - `fleet`: the server slots, each with its proxies, and the faults injected into them.
//! - `callers`: the callers in the coordinator, sending requests through idem-client under
//!   several principals that reuse the same keys on purpose.
//! - `run`: the run, from starting the store to the report.

pub(crate) mod authorizer;
mod callers;
mod endpoint;
mod fleet;
mod lambda;
mod lines;
pub(crate) mod plan;
mod poem;
mod process;
mod run;
mod runtime_api;
mod salvo;
pub(crate) mod serve;
mod served;
mod server;

pub(crate) use run::run;
