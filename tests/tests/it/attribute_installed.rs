//! Functions without `store = "..."` use the handle installed with `idem_core::install`.
//! Installing is process-wide: no other test of the binary installs a handle or calls a
//! function that takes the installed one.

use std::sync::atomic::{AtomicUsize, Ordering};

use idem_core::{idempotent, Idempotency};
use idem_stores::memory::MemoryStore;

static RUNS: AtomicUsize = AtomicUsize::new(0);

#[idempotent(key = "order")]
async fn charge(order: &str) -> Result<usize, idem_core::Error> {
    let _ = order;
    Ok(RUNS.fetch_add(1, Ordering::SeqCst) + 1)
}

#[tokio::test]
async fn without_an_installed_handle_the_body_does_not_run_then_the_installed_one_is_used() {
    let error = charge("o-1").await.unwrap_err();
    assert!(matches!(error, idem_core::Error::NotInstalled), "{error}");
    assert_eq!(RUNS.load(Ordering::SeqCst), 0);

    let idem = Idempotency::new(MemoryStore::new()).with_namespace("billing");
    idem_core::install(idem.clone());
    assert_eq!(charge("o-1").await.unwrap(), 1);
    assert_eq!(charge("o-1").await.unwrap(), 1);
    assert_eq!(RUNS.load(Ordering::SeqCst), 1);

    // The record is in the installed store, under the function's default name.
    let name = concat!(module_path!(), "::", "charge");
    let key = idem.key(name).part("o-1").finish().unwrap();
    assert!(
        idem.store().get(&key).await.unwrap().is_some(),
        "no record under {key}"
    );

    // Installing another handle replaces the first: its store has no record, so the body runs.
    let other = Idempotency::new(MemoryStore::new()).with_namespace("billing");
    idem_core::install(other.clone());
    assert_eq!(charge("o-1").await.unwrap(), 2);
    assert_eq!(charge("o-1").await.unwrap(), 2);
    assert!(other.store().get(&key).await.unwrap().is_some());
}
