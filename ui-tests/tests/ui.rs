//! Compile-time behaviour of `#[idempotent]`: what must compile, and the message of every
//! misuse (`ui/fail/*.stderr`). Regenerate the messages with `TRYBUILD=overwrite`.

#[test]
fn ui() {
    // trybuild builds the cases, and every dependency again, in a project of its own, which
    // the workspace's profile does not reach: without debug info, as the workspace builds its
    // dependencies, that build is a fraction of the size (0.8 GB otherwise) and faster. The
    // messages checked are the compiler's, which debug info does not change.
    if std::env::var_os("CARGO_PROFILE_DEV_DEBUG").is_none() {
        std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "false");
    }
    let cases = trybuild::TestCases::new();
    cases.pass("ui/pass/*.rs");
    cases.compile_fail("ui/fail/*.rs");
}
