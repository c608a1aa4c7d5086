//! The error of a keyed send that got no answer, with the key it used.

use std::error::Error as StdError;
use std::fmt;

use crate::key::IdempotencyKey;

/// A keyed `send()` that ended without a response: the last attempt's error, the key every
/// attempt carried, and how many were made. It reaches the caller as
/// `reqwest_middleware::Error::Middleware`; find it with [`SendError::of`].
///
/// The server may have processed the operation (an answer may have been lost): resend it
/// later with [the same key](SendError::key), or check its effect, before doing it again
/// under a new key.
#[derive(Debug)]
pub struct SendError {
    key: IdempotencyKey,
    attempts: u32,
    last: reqwest_middleware::Error,
    /// Whether an attempt may have reached the server.
    reached: bool,
}

impl SendError {
    pub(crate) fn new(
        key: IdempotencyKey,
        attempts: u32,
        last: reqwest_middleware::Error,
        reached: bool,
    ) -> Self {
        SendError {
            key,
            attempts,
            last,
            reached,
        }
    }

    /// The `SendError` inside `error`, when the send was keyed.
    ///
    /// ```
    /// # async fn call(client: reqwest_middleware::ClientWithMiddleware) {
    /// match client.post("http://127.0.0.1:9/payments").body("{}").send().await {
    ///     Ok(response) => println!("{}", response.status()),
    ///     Err(error) => match idem_client::SendError::of(&error) {
    ///         Some(failed) => println!("resend later with key {}", failed.key()),
    ///         None => println!("{error}"),
    ///     },
    /// }
    /// # }
    /// ```
    pub fn of(error: &reqwest_middleware::Error) -> Option<&SendError> {
        match error {
            reqwest_middleware::Error::Middleware(error) => error.downcast_ref(),
            reqwest_middleware::Error::Reqwest(_) => None,
        }
    }

    /// The `Idempotency-Key` every attempt carried.
    pub fn key(&self) -> &str {
        self.key.as_str()
    }

    /// How many attempts were made.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Whether the operation may have taken effect: some attempt may have reached the server
    /// (its answer was lost, or it timed out). False when no attempt ever connected, or the
    /// request could not be built: then nothing was sent.
    pub fn may_have_been_processed(&self) -> bool {
        self.reached
    }

    /// The last attempt's error.
    pub fn last_error(&self) -> &reqwest_middleware::Error {
        &self.last
    }

    /// The last attempt's error, owned.
    pub fn into_last_error(self) -> reqwest_middleware::Error {
        self.last
    }
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let attempts = match self.attempts {
            1 => "1 attempt".to_owned(),
            n => format!("{n} attempts"),
        };
        let key = &self.key;
        if self.reached {
            write!(
                f,
                "the request with idempotency key `{key}` got no answer after {attempts}; it may \
                 have been processed: resend it later with the same key, or check its effect \
                 (last error: {})",
                self.last
            )
        } else {
            write!(
                f,
                "the request with idempotency key `{key}` was not sent after {attempts}: {}",
                self.last
            )
        }
    }
}

impl StdError for SendError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.last)
    }
}

/// The server refused the key because the request named no principal for it to belong to:
/// idem-http's 400 [`Unscoped`](idem_protocol::problem::ProblemType::Unscoped). Nothing ran.
///
/// idem-http keeps each key in the space of the client that sent it, found by default from
/// the request's `Authorization`; a keyed request without credentials would share its key
/// with every other such client, so it is refused. Send the credentials the server expects
/// (on each request, or as a default header of the `reqwest::Client`), and the same request
/// goes through. It reaches the caller as `reqwest_middleware::Error::Middleware`; find it
/// with [`Unscoped::of`].
///
/// ```
/// # async fn call(client: reqwest_middleware::ClientWithMiddleware) {
/// let sent = client
///     .post("http://127.0.0.1:3000/payments")
///     .bearer_auth("the caller's token")
///     .body("{}")
///     .send()
///     .await;
/// if let Err(error) = sent {
///     if let Some(refused) = idem_client::Unscoped::of(&error) {
///         eprintln!("{refused}");
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct Unscoped {
    key: IdempotencyKey,
}

impl Unscoped {
    pub(crate) fn new(key: IdempotencyKey) -> Self {
        Unscoped { key }
    }

    /// The `Unscoped` inside `error`, when the server refused the key for want of a principal.
    pub fn of(error: &reqwest_middleware::Error) -> Option<&Unscoped> {
        match error {
            reqwest_middleware::Error::Middleware(error) => error.downcast_ref(),
            reqwest_middleware::Error::Reqwest(_) => None,
        }
    }

    /// The `Idempotency-Key` the request carried.
    pub fn key(&self) -> &str {
        self.key.as_str()
    }
}

impl fmt::Display for Unscoped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the server answered 400: idempotency key `{}` {}. The server keeps each key in \
             its client's own space, found from its credentials: set the `Authorization` \
             header it expects on the request (`.bearer_auth(..)`, or a default header of \
             the reqwest::Client)",
            self.key,
            idem_protocol::problem::ProblemType::Unscoped.message()
        )
    }
}

impl StdError for Unscoped {}
