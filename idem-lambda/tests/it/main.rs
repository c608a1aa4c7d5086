//! The handler, the batch processor and their keys on the memory store, one test binary with
//! a module per topic: they share the scenarios and the crate links once. `decoded_memory`,
//! `sqs_logs` and `lambda_servers` stay binaries of their own (`Cargo.toml` says why).

mod scenarios;

mod calls;
mod expressions;
mod handler;
mod principals;
mod sqs;
mod vocabulary;
