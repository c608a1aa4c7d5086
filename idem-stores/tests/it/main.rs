//! idem-stores' integration tests, one module per topic, linked into one binary. The
//! conformance suite's runs on the memory store are `tests/memory_conformance.rs`, a binary of
//! its own without libtest's harness.

mod broken_stores;
mod conformance_suite;
mod file_names;
mod memory_lending;
mod memory_lookup;
mod memory_operator;
mod memory_store;
mod one_reserve_judgement;
