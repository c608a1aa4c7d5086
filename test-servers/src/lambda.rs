//! The Lambda Runtime API for the tests: cargo-lambda's emulator (`cargo lambda watch
//! --only-lambda-apis`) on a free loopback port, which a function process polls for its
//! invocations while the test invokes it, through the invoke API or a function URL.
//!
//! `cargo-lambda` is looked up in the virtualenv that `scripts/services.sh` installs
//! (`$IDEM_SERVICES_DIR/venv/bin`, default `~/.cache/idem-services/venv/bin`), then on `PATH`.
//! When it cannot be had, [`TestRuntimeApi::start`] returns `None`, and the test returns early:
//! the [harness](crate::availability) reports it as ignored, with the reason. With
//! `IDEM_REQUIRE_BACKENDS=1` (set by CI) it panics instead.
//!
//! The emulator reads a Cargo project's metadata where it starts, and wants a binary in it:
//! it is started in a scratch project of one empty binary, which it never builds (its
//! functions are the processes the tests start).

use std::fs;
use std::io;
use std::path::PathBuf;

use crate::dynamodb::server::SERVICES_DIR_VAR;
use crate::process::{
    scratch_dir, start_failure, ServerCommand, ServerKind, ServerProcess, TestServer,
};

/// The program started.
pub const PROGRAM: &str = "cargo-lambda";

/// The name of the one function the emulator serves when it starts none itself: what it
/// tells that function in `AWS_LAMBDA_FUNCTION_NAME`, and the name invocations address.
pub const FUNCTION_NAME: &str = "_";

/// cargo-lambda's emulator of the Lambda Runtime API and of the invoke and function URL
/// endpoints, ready once it accepts connections.
#[derive(Debug)]
pub struct CargoLambda;

impl ServerKind for CargoLambda {
    const PROGRAM: &'static str = PROGRAM;
}

/// The environment a function process needs to poll the Runtime API at `runtime_api` (what it
/// is given as `AWS_LAMBDA_RUNTIME_API`): that, and the function's name, version and memory
/// that `lambda_runtime` reads at start.
pub fn function_env(runtime_api: &str) -> [(&'static str, String); 4] {
    [
        ("AWS_LAMBDA_RUNTIME_API", runtime_api.to_owned()),
        ("AWS_LAMBDA_FUNCTION_NAME", FUNCTION_NAME.to_owned()),
        ("AWS_LAMBDA_FUNCTION_VERSION", "1".to_owned()),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128".to_owned()),
    ]
}

/// The Lambda Runtime API a test's function polls, and the endpoints it is invoked through.
pub type TestRuntimeApi = TestServer<CargoLambda>;

impl TestRuntimeApi {
    /// A fresh emulator on a free loopback port. `None` if it cannot be started, unless
    /// backends are required.
    pub fn start() -> Option<TestRuntimeApi> {
        let project = match scratch_project() {
            Ok(project) => project,
            Err(error) => {
                return unavailable(&format!("no scratch project for {PROGRAM}: {error}"))
            }
        };
        let command = ServerCommand::new(program())
            .args(["lambda", "watch", "--only-lambda-apis"])
            .args(["--invoke-address", "127.0.0.1", "--invoke-port", "{port}"])
            .current_dir(&project);
        match ServerProcess::start(command) {
            Ok(process) => Some(TestRuntimeApi::owned(
                format!("http://{}", process.addr()),
                process,
                Some(project),
            )),
            Err(error) => {
                let _ = fs::remove_dir_all(&project);
                unavailable(&start_failure(PROGRAM, &error))
            }
        }
    }

    /// What a function process is given as `AWS_LAMBDA_RUNTIME_API`.
    pub fn runtime_api(&self) -> String {
        format!("{}/.rt", self.address())
    }

    /// The environment a function process needs to poll this emulator: see
    /// [`function_env`](fn@function_env).
    pub fn function_env(&self) -> [(&'static str, String); 4] {
        function_env(&self.runtime_api())
    }

    /// The invoke API's URL for the function (`POST` an event, get its response).
    pub fn invoke_url(&self) -> String {
        format!(
            "{}/2015-03-31/functions/{FUNCTION_NAME}/invocations",
            self.address()
        )
    }

    /// The function URL of `path` (starting with `/`): an HTTP request to it reaches the
    /// function as a function URL event, and its response as the HTTP response.
    pub fn function_url(&self, path: &str) -> String {
        format!("{}/lambda-url/{FUNCTION_NAME}{path}", self.address())
    }
}

/// Whether `cargo-lambda` is installed, for a test that can leave out what needs it. When it
/// is not, says why as [`TestRuntimeApi::start`] would: to the harness (the test is then
/// reported as ignored), or with a panic when backends are required.
pub fn installed() -> bool {
    let program = program();
    if program.is_file() {
        return true;
    }
    unavailable::<()>(&format!(
        "cannot start {PROGRAM} (install it with scripts/services.sh): not found"
    ));
    false
}

/// A Cargo project of one empty binary, for the emulator to read.
fn scratch_project() -> io::Result<PathBuf> {
    let project = scratch_dir("cargo-lambda")?;
    fs::create_dir_all(project.join("src"))?;
    fs::write(
        project.join("Cargo.toml"),
        "[package]\nname = \"runtime-api\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )?;
    fs::write(project.join("src").join("main.rs"), "fn main() {}\n")?;
    Ok(project)
}

/// `cargo-lambda` from the services virtualenv if it is there, else from `PATH`, else the bare
/// name (which then fails to start with `NotFound`).
fn program() -> PathBuf {
    let services_dir = match std::env::var_os(SERVICES_DIR_VAR) {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".cache").join("idem-services")),
    };
    let on_path = || {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(PROGRAM))
            .find(|path| path.is_file())
    };
    services_dir
        .map(|dir| dir.join("venv").join("bin").join(PROGRAM))
        .filter(|path| path.is_file())
        .or_else(on_path)
        .unwrap_or_else(|| PathBuf::from(PROGRAM))
}

fn unavailable<T>(reason: &str) -> Option<T> {
    crate::availability::unavailable(
        "The Lambda Runtime API",
        "No cargo-lambda",
        "install it (scripts/services.sh, or pip install cargo-lambda)",
        reason,
    )
}
