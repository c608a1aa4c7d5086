//! The contract every front end keeps, the tower layer and the actix-web middleware alike:
//! which requests are the layer's, what is refused before anything is reserved, how a keyed
//! request runs under the engine and what is stored of its answer, and the answer each outcome
//! gets. A front end only adapts its request and response types, and says how its handler is
//! called ([`Handler`]).

mod admit;
mod execute;
mod handler;
mod keep;
mod read;

pub(crate) use admit::{admit, Admission, Keyed};
pub(crate) use execute::execute;
pub(crate) use handler::Handler;
pub(crate) use read::{content_length, read_body, BodyRead};
