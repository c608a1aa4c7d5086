//! The handler's scenarios and a `lambda_http` function on real servers, one test binary with
//! a harness of its own (libtest-mimic): a test whose server cannot be had is reported as
//! ignored, with the reason, and the binary is also the deployed function's process.

#[path = "../it/scenarios/mod.rs"]
mod scenarios;

mod dynamodb;
#[cfg(feature = "http")]
mod http_function;

use std::process::ExitCode;

fn main() -> ExitCode {
    #[cfg(feature = "http")]
    if http_function::function::is_function_process() {
        return http_function::function::run();
    }
    #[allow(unused_mut)] // without the `http` feature, the DynamoDB scenarios only
    let mut tests = dynamodb::tests();
    #[cfg(feature = "http")]
    tests.extend(http_function::tests());
    idem_tests::harness::main(tests)
}
