//! The backend suite's own support: the harness its tests run under ([`binary_main!`] and
//! [`module_tests!`]), and the scenarios several files share (a crash between two steps, a
//! crowd on one key, a call interrupted mid-body, the inventory's records, sealed targets, an
//! allocator that counts). The servers and the stores on them are idem-test-servers'.

pub mod binary;
pub mod crash;
pub mod crowd;
pub mod harness;
pub mod interrupt;
pub mod inventory;
pub mod inventory_cases;
pub mod peak;
pub mod sealed;
