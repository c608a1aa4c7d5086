//! The `idem-certify` command. See the library's documentation.

fn main() -> std::process::ExitCode {
    idem_certify::main()
}
