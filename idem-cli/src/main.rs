//! The `idem` command; see the `idem_cli` crate docs, or `idem --help`.

fn main() -> std::process::ExitCode {
    idem_cli::main()
}
