//! The integration tests of the `idem` command, one module per topic, linked as one binary
//! (`it_cli`): its help and usage errors, what `get` decodes, hostile records on a terminal,
//! `key lambda`, `scope`, and `rediss://`. The scenarios every store runs are in
//! `it_cli_backends` (`backends.rs`).

mod cli;
mod get_outcome;
mod hostile_records;
mod lambda_key;
mod redis_tls;
mod scope;
mod support;
mod terminal;
