//! A call interrupted inside its body: the fault tests' way of making something happen to the
//! store (its server killed, say) between the reservation and the completion.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use idem_core::{Answered, Call, Error, Idempotency};
use tokio::sync::oneshot;

/// Runs `call` with a body that counts itself in `runs`, runs `interrupt` once the body has
/// started (the key is reserved by then), and lets the body return `"created"`; returns what
/// the call returned.
pub async fn interrupted_mid_body(
    idem: &Idempotency,
    call: Call,
    runs: &Arc<AtomicUsize>,
    interrupt: impl FnOnce(),
) -> Result<Answered<String>, Error> {
    let (started_tx, started) = oneshot::channel();
    let (finish, finish_rx) = oneshot::channel::<()>();
    let call = tokio::spawn({
        let (idem, runs) = (idem.clone(), runs.clone());
        async move {
            idem.run(call, async move {
                runs.fetch_add(1, Ordering::SeqCst);
                started_tx.send(()).expect("the test waits for the start");
                finish_rx.await.expect("the test lets the body finish");
                Ok::<_, Error>("created".to_owned())
            })
            .await
        }
    });
    started.await.expect("the body starts");
    interrupt();
    finish.send(()).expect("the body waits to finish");
    call.await.expect("the call does not panic")
}
