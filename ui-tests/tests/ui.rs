//! Compile-time behaviour of `#[idempotent]`: what must compile, and the message of every
//! misuse (`ui/fail/*.stderr`). Regenerate the messages with `TRYBUILD=overwrite`.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui/pass/*.rs");
    cases.compile_fail("ui/fail/*.rs");
}
