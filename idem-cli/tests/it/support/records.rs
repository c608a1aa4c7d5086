//! Records written through a handle, as a service would write them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use idem_core::{store::Timestamp, Answered, Call, Clock, Error, Fingerprint, Idempotency, Key};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A clock two days behind the system's.
#[derive(Clone, Copy, Debug)]
pub struct PastClock;

impl Clock for PastClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_system_time(SystemTime::now()) - Duration::from_secs(2 * 86_400)
    }
}

/// The error the test functions return; `Declined` is stored and replayed.
#[derive(Debug, Serialize, Deserialize)]
pub enum PayError {
    /// Stored: the charge was declined after the card was touched.
    Declined(String),
    /// idem's own failures.
    Idem(String),
}

impl From<Error> for PayError {
    fn from(error: Error) -> Self {
        PayError::Idem(error.to_string())
    }
}

/// The key of `function` for `part`, in the default namespace.
pub fn key(idem: &Idempotency, function: &str, part: &str) -> Key {
    idem.key(function).part(part).finish().expect("a valid key")
}

/// The call for `key`, fingerprinted by `part`, with the default TTL (24 h).
fn call(key: &Key, part: &str) -> Call {
    Call::new(key.clone(), Fingerprint::of(part).expect("a fingerprint"))
}

/// Completes a call under `function`/`part` with `Ok("receipt-<part>")`: the record that
/// `get` shows as `completed`. Returns its key.
pub async fn completed(idem: &Idempotency, function: &str, part: &str) -> Key {
    let key = key(idem, function, part);
    let receipt = format!("receipt-{part}");
    let done = idem
        .run(call(&key, part), async { Ok::<_, Error>(receipt) })
        .await
        .expect("the call completes");
    assert!(!done.replayed);
    key
}

/// Completes a call under `function`/`part` in `scope` (as idem-http scopes a request's key)
/// with `Ok(..)`. Returns its key.
pub async fn completed_in_scope(
    idem: &Idempotency,
    function: &str,
    scope: &str,
    part: &str,
) -> Key {
    let key = idem
        .key(function)
        .scope(Some(scope))
        .part(part)
        .finish()
        .expect("a valid key");
    idem.run(call(&key, part), async { Ok::<_, Error>(1u8) })
        .await
        .expect("the call completes");
    key
}

/// Completes a call under `function`/`part` with a stored `Err(Declined)`. Returns its key.
pub async fn stored_error(idem: &Idempotency, function: &str, part: &str) -> Key {
    let key = key(idem, function, part);
    let result = idem
        .run_storing_errors(
            call(&key, part),
            |error: &PayError| matches!(error, PayError::Declined(_)),
            async { Err::<String, _>(PayError::Declined("card declined".into())) },
        )
        .await;
    assert!(matches!(result, Err(PayError::Declined(_))), "{result:?}");
    key
}

/// A call holding its key: it recorded step `prepare` and waits to be let go.
pub struct Held {
    /// The key it holds.
    pub key: Key,
    go: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<Answered<String>, Error>>>,
}

impl Held {
    /// Lets the call finish and returns what it returned.
    pub async fn finish(mut self) -> Result<Answered<String>, Error> {
        if let Some(go) = self.go.take() {
            let _ = go.send(());
        }
        self.task
            .take()
            .expect("finished once")
            .await
            .expect("the held call does not panic")
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(go) = self.go.take() {
            let _ = go.send(());
        }
    }
}

/// Starts a call under `function`/`part` that records step `prepare`, then waits; returns
/// once the step is recorded.
pub async fn hold(idem: &Idempotency, function: &str, part: &str) -> Held {
    let key = key(idem, function, part);
    let (started, has_started) = oneshot::channel();
    let (go, wait) = oneshot::channel::<()>();
    let idem = idem.clone();
    let call = call(&key, part);
    let task = tokio::spawn(async move {
        idem.run(call, async move {
            idem_core::step("prepare", async { Ok::<_, Error>(1u32) }).await?;
            let _ = started.send(());
            let _ = wait.await;
            Ok::<_, Error>("held".to_owned())
        })
        .await
    });
    has_started.await.expect("the held call starts");
    Held {
        key,
        go: Some(go),
        task: Some(task),
    }
}

/// Runs a call with the same key and fingerprint as [`completed`] or [`hold`] would, and
/// returns how many times its body ran (0 on a replay, 1 when it ran) and the value.
pub async fn call_again(idem: &Idempotency, function: &str, part: &str) -> (usize, String) {
    let key = key(idem, function, part);
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let done = idem
        .run(call(&key, part), async move {
            idem_core::step("prepare", async { Ok::<_, Error>(1u32) }).await?;
            counted.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(format!("again-{part}"))
        })
        .await
        .expect("the call succeeds");
    (runs.load(Ordering::SeqCst), done.value)
}
