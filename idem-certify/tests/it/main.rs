//! The certifier's integration tests, one test binary with a module per topic: the checker on
//! hand-written histories, the fault proxy, and the command run as a person would.

mod support;

mod checker;
mod proxy;
mod proxy_urls;
mod runs;
