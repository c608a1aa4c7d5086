//! The client middleware against real servers on loopback, one test binary with a module per
//! topic: they share the support code and the crate links once.

mod support;

mod call_keys;
mod half_the_answers_lost;
mod problem_types;
mod retry_table;
mod round_trip;
mod transport;
