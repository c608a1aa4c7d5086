//! `#[idempotent(response_hook = "...")]`: every replayed value, and only those, goes through
//! the hook, as Powertools' `response_hook`; a replayed stored error does not. Under
//! `clippy::all` so that clippy checks the generated code too.
#![deny(warnings, unused_qualifications, clippy::all)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::LazyLock;

use idem_core::{idempotent, Idempotency, Replay};
use idem_stores::memory::MemoryStore;
use serde::{Deserialize, Serialize};

static IDEM: LazyLock<Idempotency> = LazyLock::new(|| Idempotency::new(MemoryStore::new()));
static RUNS: AtomicUsize = AtomicUsize::new(0);

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Receipt {
    order_id: String,
    replayed_under: Option<String>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum PayError {
    Declined,
    Idem(u16),
}

impl From<idem_core::Error> for PayError {
    fn from(error: idem_core::Error) -> Self {
        PayError::Idem(error.http_status())
    }
}

fn mark_replayed(mut receipt: Receipt, replay: &Replay<'_>) -> Receipt {
    receipt.replayed_under = Some(replay.key().as_str().to_owned());
    receipt
}

#[idempotent(key = "order_id", store = "&*IDEM", response_hook = "mark_replayed")]
async fn charge(order_id: &str) -> Result<Receipt, PayError> {
    RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(Receipt {
        order_id: order_id.to_owned(),
        replayed_under: None,
    })
}

#[idempotent(
    key = "order_id",
    store = "&*IDEM",
    store_err = "all",
    response_hook = "mark_replayed"
)]
async fn declined(order_id: &str) -> Result<Receipt, PayError> {
    RUNS.fetch_add(1, Ordering::SeqCst);
    Err(PayError::Declined)
}

#[tokio::test]
async fn replayed_values_go_through_the_hook_and_first_ones_do_not() {
    let first = charge("o-1").await.unwrap();
    assert_eq!(first.replayed_under, None, "the body's own value");
    let retry = charge("o-1").await.unwrap();
    let key = retry.replayed_under.expect("marked by the hook");
    assert!(key.ends_with("|o-1"), "{key}");
    assert_eq!(retry.order_id, "o-1");
    assert_eq!(RUNS.load(Ordering::SeqCst), 1);

    assert_eq!(declined("o-2").await, Err(PayError::Declined));
    assert_eq!(
        declined("o-2").await,
        Err(PayError::Declined),
        "a stored error replays as it is"
    );
    assert_eq!(RUNS.load(Ordering::SeqCst), 2);
}
