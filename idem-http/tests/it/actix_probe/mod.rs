//! The actix-web middleware under requests, handlers, middleware orders and server lifecycles
//! that actix-web treats its own way, each on a real server on loopback with a real client,
//! and compared with the tower layer in axum where the two must answer alike.

mod support;

mod answers;
mod bodies;
mod kept_connections;
mod lifecycles;
mod requests;
mod scopes;
mod views;
