//! The handle `#[idempotent]` functions use when they are not given one.

use std::sync::RwLock;

use crate::{error::Error, handle::Idempotency};

static INSTALLED: RwLock<Option<Idempotency>> = RwLock::new(None);

/// Makes `handle` the default for every `#[idempotent]` function without a `store = "..."`
/// argument. Call it once at start-up; a later call replaces the handle for calls that start
/// afterwards. Logs every name two `#[idempotent]` functions of the program share
/// ([`check_function_names`](crate::check_function_names)): such functions refuse to run.
pub fn install(handle: Idempotency) {
    crate::key::names::log_duplicates();
    *INSTALLED.write().unwrap_or_else(|e| e.into_inner()) = Some(handle);
}

/// The installed handle, or [`Error::NotInstalled`].
pub fn installed() -> Result<Idempotency, Error> {
    INSTALLED
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .ok_or(Error::NotInstalled)
}
