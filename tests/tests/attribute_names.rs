//! Two `#[idempotent]` functions with one name would share records: one given the same
//! `name` as another, or two helpers nested in different functions of one module (both named
//! after the module). Neither runs; `check_function_names` and the error name both sites.

use std::sync::atomic::{AtomicUsize, Ordering};

use idem_core::{idempotent, Idempotency};
use idem_stores::memory::MemoryStore;

static RUNS: AtomicUsize = AtomicUsize::new(0);

#[idempotent(store = "idem", key = "order", name = "payments.v1")]
async fn charge(idem: &Idempotency, order: &str) -> Result<String, idem_core::Error> {
    RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(format!("charged {order}"))
}

#[idempotent(store = "idem", key = "order", name = "payments.v1")]
async fn refund(idem: &Idempotency, order: &str) -> Result<String, idem_core::Error> {
    RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(format!("refunded {order}"))
}

async fn payments(idem: &Idempotency, id: u64) -> Result<u64, idem_core::Error> {
    #[idempotent(store = "idem", key = "id")]
    async fn step(idem: &Idempotency, id: u64) -> Result<u64, idem_core::Error> {
        RUNS.fetch_add(1, Ordering::SeqCst);
        Ok(id)
    }
    step(idem, id).await
}

async fn refunds(idem: &Idempotency, id: u64) -> Result<u64, idem_core::Error> {
    #[idempotent(store = "idem", key = "id")]
    async fn step(idem: &Idempotency, id: u64) -> Result<u64, idem_core::Error> {
        RUNS.fetch_add(1, Ordering::SeqCst);
        Ok(id + 1000)
    }
    step(idem, id).await
}

fn assert_duplicate(error: &idem_core::Error, name: &str) {
    match error {
        idem_core::Error::DuplicateName {
            name: shared,
            sites,
        } => {
            assert_eq!(shared, name);
            assert_eq!(sites.len(), 2, "{sites:?}");
            assert!(
                sites
                    .iter()
                    .all(|site| site.contains("attribute_names.rs:")),
                "{sites:?}"
            );
        }
        other => panic!("expected DuplicateName for {name}, got {other:?}"),
    }
    assert_eq!(error.http_status(), 500);
    assert!(
        error.to_string().contains("give each its own `name"),
        "{error}"
    );
}

#[tokio::test]
async fn functions_sharing_a_name_refuse_to_run() {
    let idem = Idempotency::new(MemoryStore::new());
    assert_duplicate(&charge(&idem, "o1").await.unwrap_err(), "payments.v1");
    assert_duplicate(&refund(&idem, "o1").await.unwrap_err(), "payments.v1");
    let nested = concat!(module_path!(), "::step");
    assert_duplicate(&payments(&idem, 1).await.unwrap_err(), nested);
    assert_duplicate(&refunds(&idem, 1).await.unwrap_err(), nested);
    assert_eq!(RUNS.load(Ordering::SeqCst), 0, "no body ran");
}

#[test]
fn check_names_reports_a_shared_name() {
    let error = idem_core::check_function_names().unwrap_err();
    assert_duplicate(&error, concat!(module_path!(), "::step"));
}
