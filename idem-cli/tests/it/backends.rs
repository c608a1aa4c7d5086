//! The scenarios every store runs, with the `idem` command on Redis (and a Redis Cluster),
//! PostgreSQL and DynamoDB, linked as one binary (`it_cli_backends`) under the backend
//! harness: a test whose server cannot be had is reported as ignored, with the reason.

use std::process::ExitCode;

mod dynamodb;
mod postgres;
mod redis;
mod support;

fn main() -> ExitCode {
    let tests = [redis::tests(), postgres::tests(), dynamodb::tests()];
    idem_tests::harness::main(tests.into_iter().flatten().collect())
}
