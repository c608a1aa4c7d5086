//! The certifier's integration tests, one test binary with a module per topic: the checker on
//! hand-written histories, the fault proxy, the command run as a person would, and its aimed
//! faults.

mod support;

mod aimed;
mod checker;
mod proxy;
mod proxy_urls;
mod runs;
