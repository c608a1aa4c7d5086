//! The retry loop: one key for every attempt of a `send()`.

use std::time::{Duration, Instant};

use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

use crate::config::{Config, IdempotentRetry};
use crate::error::SendError;
use crate::key::IdempotencyKey;
use crate::verdict::{self, Reason, Verdict};
use crate::{problem, wait};

const TARGET: &str = "idem_client";

#[async_trait::async_trait]
impl Middleware for IdempotentRetry {
    async fn handle(
        &self,
        mut request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let config = &*self.config;
        let Some(key) = key_for(&mut request, config) else {
            return next.run(request, extensions).await;
        };
        let started = Instant::now();
        let mut attempt = 1;
        loop {
            let spare = request.try_clone();
            let outcome = next.clone().run(request, extensions).await;
            let (outcome, verdict) = judge(outcome, config).await;
            let Verdict::Retry {
                reason,
                retry_after,
            } = verdict
            else {
                return finish(outcome, key, attempt, false);
            };
            let lost = reason == Reason::NoAnswer;
            let Some(spare) = spare else {
                tracing::warn!(target: TARGET, %key, %reason,
                    "the request's body is a stream that cannot be sent again: not retried");
                return finish(outcome, key, attempt, lost);
            };
            if attempt >= config.max_attempts {
                tracing::warn!(target: TARGET, %key, attempts = attempt, %reason,
                    "giving up: no attempts left");
                return finish(outcome, key, attempt, lost);
            }
            let wait = wait::before_next(attempt, retry_after, config);
            if started.elapsed() + wait > config.max_elapsed {
                tracing::warn!(target: TARGET, %key, attempts = attempt, %reason,
                    wait_ms = millis(wait), "giving up: the next attempt would start too late");
                return finish(outcome, key, attempt, lost);
            }
            tracing::info!(target: TARGET, %key, attempt, %reason, wait_ms = millis(wait),
                "retrying with the same key");
            drop(outcome);
            tokio::time::sleep(wait).await;
            request = spare;
            attempt += 1;
        }
    }
}

/// The key of `request`: the caller's, or a fresh one set in its header when its method is
/// keyed; none for a request that is left alone.
fn key_for(request: &mut Request, config: &Config) -> Option<IdempotencyKey> {
    if let Some(value) = request.headers().get(&config.header) {
        return Some(IdempotencyKey::from_header(value));
    }
    if !config.keyed_methods.contains(request.method()) {
        return None;
    }
    let key = IdempotencyKey::mint();
    let value = http::HeaderValue::from_str(key.as_str()).expect("a UUID is a valid header");
    request.headers_mut().insert(config.header.clone(), value);
    Some(key)
}

type Outcome = reqwest_middleware::Result<Response>;

async fn judge(outcome: Outcome, config: &Config) -> (Outcome, Verdict) {
    match outcome {
        Err(error) => {
            let verdict = verdict::on_error(&error);
            (Err(error), verdict)
        }
        Ok(response) => {
            let (response, problem_type) = if verdict::may_be_not_recorded(response.status()) {
                problem::problem_type(response).await
            } else {
                (response, None)
            };
            let verdict = verdict::on_response(
                response.status(),
                response.headers(),
                problem_type.as_deref(),
                config,
            );
            (Ok(response), verdict)
        }
    }
}

/// The outcome as the caller gets it: the response with its key, or the error inside a
/// [`SendError`] that names it.
fn finish(outcome: Outcome, key: IdempotencyKey, attempts: u32, answer_lost: bool) -> Outcome {
    match outcome {
        Ok(mut response) => {
            response.extensions_mut().insert(key);
            Ok(response)
        }
        Err(error) => Err(reqwest_middleware::Error::middleware(SendError::new(
            key,
            attempts,
            error,
            answer_lost,
        ))),
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
