//! A keyed request under the engine: reserved, run (in a task of its own once its client is
//! gone), stored, and answered.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use bytes::Bytes;
use http::request::Parts;
use http::{Request, Response};
use idem_core::{Answered, Begun, Call};
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::answer;
use crate::asked::{answer_stored, Asked};
use crate::body::Body;
use crate::config::Config;
use crate::contract::keep::{run, HoldServiceErrors, Unstored};
use crate::contract::{Handler, Keyed};
use crate::detached::{self, Detached};
use crate::request::fingerprint::Fingerprinted;
use crate::request::raw_digest::raw_digest;
use crate::request::shared_bodies::SharedBody;
use crate::response::stored::{self, FrameCodec, StoredResponse};
use crate::telemetry::RequestOutcome;
use crate::TARGET;

/// Answers the keyed request whose head is `parts` and whose whole body is `bytes`, running
/// `handler` at most once under the engine.
pub(crate) async fn execute<H: Handler>(
    config: Arc<Config>,
    keyed: Keyed,
    parts: Parts,
    bytes: Bytes,
    handler: H,
) -> (RequestOutcome, Result<Response<Body>, H::Error>) {
    use RequestOutcome::*;
    let Keyed { key, scope, asked } = keyed;
    let (call, bytes, _shared) = match call(&config, &key, scope.as_deref(), &parts, bytes) {
        Ok(prepared) => prepared,
        Err(error) => {
            let answer = asked.render(answer::engine_error(&error, &key, &config));
            return (RequestOutcome::of(&error), Ok(answer));
        }
    };
    // A replay found in the process (the replay cache, an in-process store's lookup) is
    // answered before the handler's request, its future, the channel for a streamed head and
    // the call's own future are built. A panic there (a store's lookup, a recorder) is the
    // request's answer, as a handler's is; nothing was claimed, so nothing is held.
    let begun = std::panic::catch_unwind(AssertUnwindSafe(|| {
        config.idem.begin(call, &HoldServiceErrors, &FrameCodec)
    }));
    let pending = match begun {
        Ok(Begun::Answered(answered)) => return answer_with(answered, &key, &asked, &config),
        Ok(Begun::Pending(pending)) => pending,
        Err(panicked) => {
            let error = detached::message(&panicked);
            tracing::error!(target: TARGET, key = config.logged_key(&key), error, "the call panicked before it claimed its key; nothing is held");
            return (Failed, Ok(asked.render(answer::failed(&key))));
        }
    };
    let request = Request::from_parts(parts, bytes);
    // The call runs in this task; if the client disconnects before it ends, it finishes in a
    // task of its own, so that the handler is not cut off halfway: its response is stored,
    // and the retry gets the replay (a streamed body, though, is read on only while it can
    // still be kept).
    let (head_sender, mut head) = oneshot::channel();
    let mut run = Detached::new(
        run(
            config.clone(),
            pending,
            key.clone(),
            handler,
            request,
            head_sender,
        )
        .in_current_span(),
    );
    // A streamed response is handed over as soon as its head is there; the call goes on
    // forwarding its body in a task of its own once `run` is dropped.
    let mut head_open = true;
    let ran = std::future::poll_fn(|cx| {
        if let Poll::Ready(ran) = Pin::new(&mut run).poll(cx) {
            // A streamed response whose body ended in this same poll: its head, sent first,
            // is the answer, as when the call goes on in a task of its own.
            if let (true, Ok(response)) = (head_open, head.try_recv()) {
                return Poll::Ready(Err(response));
            }
            return Poll::Ready(Ok(ran));
        }
        if head_open {
            match Pin::new(&mut head).poll(cx) {
                Poll::Ready(Ok(response)) => return Poll::Ready(Err(response)),
                // The response is not streamed: `run` ends with it.
                Poll::Ready(Err(_)) => head_open = false,
                Poll::Pending => {}
            }
        }
        Poll::Pending
    })
    .await;
    let ran = match ran {
        Ok(ran) => ran,
        Err(streamed) => return (Streamed, Ok(streamed)),
    };
    match ran {
        Ok(answered) => answer_with(answered, &key, &asked, &config),
        Err(panicked) => {
            let error = detached::message(&panicked);
            tracing::error!(target: TARGET, key = config.logged_key(&key), error, "the handler panicked; its key is held until its lease passes");
            (NotRecorded, Ok(asked.render(answer::not_recorded(&key))))
        }
    }
}

/// The answer to a request with `key` whose call ended with `answered`.
fn answer_with<E>(
    answered: Result<Answered<StoredResponse>, Unstored<E>>,
    key: &str,
    asked: &Asked,
    config: &Config,
) -> (RequestOutcome, Result<Response<Body>, E>) {
    use RequestOutcome::*;
    match answered {
        Ok(executed) => {
            let outcome = if executed.replayed {
                Replayed
            } else {
                Executed
            };
            (outcome, Ok(answer_stored(executed, key, asked, config)))
        }
        Err(Unstored::PassedOn(response)) => (NotStored, Ok(response)),
        Err(Unstored::Inner(error)) => (Failed, Err(error)),
        Err(Unstored::Engine(error)) => {
            let answer = asked.render(answer::engine_error(&error, key, config));
            (RequestOutcome::of(&error), Ok(answer))
        }
        Err(Unstored::Released) => (NotStored, Ok(asked.render(answer::failed(key)))),
    }
}

/// The engine call for a request with `key` in `scope`, and its body: shared with the
/// duplicates in flight that sent the same bytes, with the guard that keeps it so.
fn call(
    config: &Arc<Config>,
    key: &str,
    scope: Option<&str>,
    parts: &Parts,
    body: Bytes,
) -> Result<(Call, Bytes, Option<SharedBody>), idem_core::Error> {
    let stored_key = config
        .idem
        .key(&config.name)
        .scope(scope)
        .part(key)
        .finish()?;
    let names = &config.fingerprint_headers;
    let raw = raw_digest(parts, &body, names)?;
    // Duplicates that wait for the first request hold its body, not a copy each; so does the
    // fingerprint's closure.
    let (body, shared) = config.bodies.share(raw, body);
    // Read as JSON only when the record found before anything is claimed (in the replay
    // cache, or by an in-process store's lookup) is of other bytes, or there is none: a
    // network store's record comes with the reservation, which needs the fingerprint.
    let fingerprinted = Fingerprinted::of(parts, body.clone(), names);
    let config_held = config.clone();
    let canonical = move || fingerprinted.fingerprint(&config_held.fingerprint_headers);
    let mut call = Call::deferred(stored_key, raw, canonical)
        .with_ttl(config.ttl)
        .with_max_outcome(stored::max_stored_len(config.max_response_body));
    if let Some(wait) = config.wait {
        call = call.with_wait(wait);
    }
    if let Some(lease) = config.lease {
        call = call.with_lease(lease);
    }
    Ok((call, body, shared))
}

#[cfg(test)]
mod tests;
