//! The `idem` command, for the system tests (`tests/tests/backend/system_*.rs`): idem-cli's own
//! entry point, `idem_cli::main`, in a binary of this package, so that the tests run it as a
//! process through `CARGO_BIN_EXE_system-idem`. It is the command an operator installs, under
//! another name (a second binary called `idem` in the workspace would collide with idem-cli's).

fn main() -> std::process::ExitCode {
    idem_cli::main()
}
