//! idem-conformance's integration tests, one module per topic, linked into one binary. The
//! suite's own runs against the reference store are `tests/reference_store.rs`, a binary of its
//! own without libtest's harness.

mod reserve_cases;
