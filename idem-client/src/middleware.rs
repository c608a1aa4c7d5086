//! The retry loop: one key for every attempt of a `send()`.

use std::time::{Duration, Instant};

use http::Extensions;
use idem_protocol::problem::ProblemType;
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

use crate::config::{Config, IdempotentRetry};
use crate::error::{SendError, Unscoped};
use crate::key::IdempotencyKey;
use crate::operation::Operation;
use crate::problem::{self, Problem};
use crate::verdict::{self, Verdict};
use crate::wait;

const TARGET: &str = idem_protocol::log::CLIENT;

#[async_trait::async_trait]
impl Middleware for IdempotentRetry {
    async fn handle(
        &self,
        mut request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let config = &*self.config;
        let Some(key) = key_for(&mut request, extensions, config) else {
            return next.run(request, extensions).await;
        };
        if let Some(lost) = lease_lost() {
            tracing::error!(target: TARGET, key = config.logged_key(key.as_str()),
                "the idempotent call sending this request is known to have lost its lease: not sent");
            return Err(reqwest_middleware::Error::middleware(lost));
        }
        let started = Instant::now();
        let mut attempt = 1;
        let mut reached = false;
        loop {
            let spare = request.try_clone();
            let outcome = next.clone().run(request, extensions).await;
            reached |= may_have_reached(&outcome);
            let (outcome, verdict) = judge(outcome, &key, config).await;
            let Verdict::Retry {
                reason,
                retry_after,
            } = verdict
            else {
                return finish(outcome, key, attempt, reached, extensions);
            };
            let Some(spare) = spare else {
                tracing::warn!(target: TARGET, key = config.logged_key(key.as_str()), %reason,
                    "the request's body is a stream that cannot be sent again: not retried");
                return finish(outcome, key, attempt, reached, extensions);
            };
            if attempt >= config.max_attempts {
                tracing::warn!(target: TARGET, key = config.logged_key(key.as_str()), attempts = attempt, %reason,
                    "giving up: no attempts left");
                return finish(outcome, key, attempt, reached, extensions);
            }
            let wait = wait::before_next(attempt, retry_after, config);
            let next_start = started.elapsed().checked_add(wait);
            if next_start.is_none_or(|start| start > config.max_elapsed) {
                tracing::warn!(target: TARGET, key = config.logged_key(key.as_str()), attempts = attempt, %reason,
                    wait_ms = millis(wait), "giving up: the next attempt would start too late");
                return finish(outcome, key, attempt, reached, extensions);
            }
            tracing::info!(target: TARGET, key = config.logged_key(key.as_str()), attempt, %reason, wait_ms = millis(wait),
                "retrying with the same key");
            drop(outcome);
            tokio::time::sleep(wait).await;
            // The lease may have passed while the last attempt or the wait ran: a retry sent
            // then would be the second effect the check before the first attempt prevents.
            if let Some(lost) = lease_lost() {
                tracing::error!(target: TARGET, key = config.logged_key(key.as_str()), attempts = attempt,
                    "the idempotent call sending this request lost its lease while it was retried: not sent again");
                return Err(reqwest_middleware::Error::middleware(lost));
            }
            request = spare;
            attempt += 1;
        }
    }
}

/// The key of `request`: the caller's, or one set in its header when its method is keyed;
/// none for a request that is left alone.
fn key_for(
    request: &mut Request,
    extensions: &mut Extensions,
    config: &Config,
) -> Option<IdempotencyKey> {
    if let Some(value) = request.headers().get(&config.header) {
        return Some(IdempotencyKey::from_header(value));
    }
    if !config.keyed_methods.contains(request.method()) {
        return None;
    }
    let key = Minted::reuse_or_mint(request, extensions, config);
    let value = if config.sf_string_keys {
        idem_protocol::key::to_sf_string(key.as_str())
    } else {
        key.to_string()
    };
    let value =
        http::HeaderValue::from_str(&value).expect("a UUID or a downstream key is a valid header");
    request.headers_mut().insert(config.header.clone(), value);
    Some(key)
}

/// The key minted for a `send()`, kept in its extensions with what it was minted for until the
/// send has a response: a retry middleware outside this one that resends the request as it
/// was, without its key, after an error gets the same key; another request through the same
/// extensions, or the same one once answered, gets a key of its own.
#[derive(Clone)]
struct Minted {
    key: IdempotencyKey,
    request: u64,
}

impl Minted {
    fn reuse_or_mint(
        request: &Request,
        extensions: &mut Extensions,
        config: &Config,
    ) -> IdempotencyKey {
        let digest = Self::digest(request);
        if let Some(minted) = extensions.get::<Minted>() {
            if minted.request == digest {
                return minted.key.clone();
            }
        }
        let of_call = config
            .downstream_keys
            .then(|| IdempotencyKey::of_call(request, extensions.get::<Operation>()))
            .flatten();
        let key = of_call.unwrap_or_else(IdempotencyKey::mint);
        extensions.insert(Minted {
            key: key.clone(),
            request: digest,
        });
        key
    }

    /// The method, URL and body (when it is in memory) of `request`.
    fn digest(request: &Request) -> u64 {
        use std::hash::{Hash, Hasher};

        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        request.method().hash(&mut hasher);
        request.url().as_str().hash(&mut hasher);
        request
            .body()
            .and_then(reqwest::Body::as_bytes)
            .hash(&mut hasher);
        hasher.finish()
    }
}

/// When the request is sent from inside an idempotent call whose lease is known lost (another
/// caller may run it now, or the process was paused past it), the error it fails with instead
/// of being sent: its effect would be a second one.
fn lease_lost() -> Option<idem_core::Error> {
    let call = idem_core::context()?;
    if !call.is_lease_lost() {
        return None;
    }
    let key = call.key().as_str().to_owned();
    Some(idem_core::Error::NotRecorded {
        key: key.clone(),
        cause: Box::new(idem_core::Error::LeaseLost { key }),
    })
}

type Outcome = reqwest_middleware::Result<Response>;

/// Whether the request may have reached the server, and so taken effect: unless the
/// connection was never made or the request never built. Another middleware's error says
/// nothing, so it counts as a maybe.
fn may_have_reached(outcome: &Outcome) -> bool {
    match outcome {
        Ok(_) | Err(reqwest_middleware::Error::Middleware(_)) => true,
        Err(reqwest_middleware::Error::Reqwest(error)) => {
            !(error.is_connect() || error.is_builder())
        }
    }
}

/// The outcome of an attempt with the verdict on it. A refusal of the key for want of a
/// principal becomes an [`Unscoped`] error, which says what the server needs.
async fn judge(outcome: Outcome, key: &IdempotencyKey, config: &Config) -> (Outcome, Verdict) {
    match outcome {
        Err(error) => {
            let verdict = verdict::on_error(&error);
            (Err(error), verdict)
        }
        Ok(response) => {
            let (response, problem) = if verdict::reads_problem(response.status()) {
                problem::read(response).await
            } else {
                (response, Problem::None)
            };
            if verdict::problem_type(&problem) == Some(ProblemType::Unscoped) {
                let refused = Unscoped::new(key.clone());
                return (
                    Err(reqwest_middleware::Error::middleware(refused)),
                    Verdict::Final,
                );
            }
            let verdict =
                verdict::on_response(response.status(), response.headers(), &problem, config);
            (Ok(response), verdict)
        }
    }
}

/// The outcome as the caller gets it: the response with its key, or the error inside a
/// [`SendError`] that names it and says whether an attempt may have `reached` the server.
/// Once there is a response, the operation has its answer: the key minted for it is
/// forgotten, so that a request sent later through the same extensions is another operation.
fn finish(
    outcome: Outcome,
    key: IdempotencyKey,
    attempts: u32,
    reached: bool,
    extensions: &mut Extensions,
) -> Outcome {
    match outcome {
        Ok(mut response) => {
            extensions.remove::<Minted>();
            response.extensions_mut().insert(key);
            Ok(response)
        }
        Err(error) if Unscoped::of(&error).is_some() => Err(error),
        Err(error) => Err(reqwest_middleware::Error::middleware(SendError::new(
            key, attempts, error, reached,
        ))),
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
