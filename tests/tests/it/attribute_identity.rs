//! What keeps two calls of `#[idempotent]` functions apart, observed on the memory store: the
//! concrete type behind an `impl Trait` argument, the receiver of a keyed method, keys from
//! `macro_rules!`, the common identifier types, and `_` arguments.
#![deny(warnings, unused_qualifications, clippy::all)]

use std::sync::atomic::{AtomicUsize, Ordering};

use idem_core::{idempotent, Idempotency};
use idem_stores::memory::MemoryStore;
use serde::Serialize;

fn handle() -> Idempotency {
    Idempotency::new(MemoryStore::new())
}

#[derive(Serialize)]
struct User {
    id: u64,
}

#[derive(Serialize)]
struct Order {
    id: u64,
}

static SAVED: AtomicUsize = AtomicUsize::new(0);

/// `User { id: 1 }` and `Order { id: 1 }` serialise alike; only their types differ.
#[idempotent(store = "idem")]
async fn save_any(
    idem: &Idempotency,
    item: impl Serialize + Send,
) -> Result<usize, idem_core::Error> {
    let _ = serde_json::to_vec(&item);
    Ok(SAVED.fetch_add(1, Ordering::SeqCst))
}

static SAVED_KEYED: AtomicUsize = AtomicUsize::new(0);

#[idempotent(store = "idem", key = "id")]
async fn save_keyed(
    idem: &Idempotency,
    id: u64,
    item: &(impl Serialize + Sync),
) -> Result<usize, idem_core::Error> {
    let _ = serde_json::to_vec(item);
    Ok(SAVED_KEYED.fetch_add(1, Ordering::SeqCst))
}

#[tokio::test]
async fn impl_trait_arguments_of_other_types_do_not_share_records() {
    let idem = handle();
    let user = save_any(&idem, User { id: 1 }).await.unwrap();
    let order = save_any(&idem, Order { id: 1 }).await.unwrap();
    assert_ne!(
        user, order,
        "the Order call ran instead of replaying the User's"
    );
    assert_eq!(
        save_any(&idem, User { id: 1 }).await.unwrap(),
        user,
        "replayed"
    );
    assert_eq!(
        save_any(&idem, &User { id: 1 }).await.unwrap(),
        user,
        "a `&User` is the same call as a `User`"
    );

    let user = save_keyed(&idem, 1, &User { id: 1 }).await.unwrap();
    let order = save_keyed(&idem, 1, &Order { id: 1 }).await.unwrap();
    assert_ne!(user, order, "keyed too, each type has its own record");

    let key = idem
        .key(concat!(
            module_path!(),
            "::save_any[item = ",
            module_path!(),
            "::User]"
        ))
        .part(
            idem_core::Fingerprint::of(&User { id: 1 })
                .unwrap()
                .to_hex()
                .as_str(),
        )
        .finish()
        .unwrap();
    assert!(
        idem.store().get(&key).await.unwrap().is_some(),
        "the name spells the type"
    );
}

struct Tenant {
    name: String,
    idem: Idempotency,
    runs: AtomicUsize,
}

#[idempotent]
impl Tenant {
    #[idempotent(store = "self.idem", key = "id", scope = "self.name")]
    async fn invoice(&self, id: u64) -> Result<String, idem_core::Error> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(format!("{}-{id}", self.name))
    }
}

#[tokio::test]
async fn a_keyed_method_scoped_by_its_receiver_keeps_receivers_apart() {
    let idem = handle();
    let tenant = |name: &str| Tenant {
        name: name.into(),
        idem: idem.clone(),
        runs: AtomicUsize::new(0),
    };
    let (alice, bob) = (tenant("alice"), tenant("bob"));
    assert_eq!(alice.invoice(1).await.unwrap(), "alice-1");
    assert_eq!(bob.invoice(1).await.unwrap(), "bob-1");
    assert_eq!(alice.invoice(1).await.unwrap(), "alice-1");
    assert_eq!(alice.runs.load(Ordering::SeqCst), 1);
    assert_eq!(bob.runs.load(Ordering::SeqCst), 1);
}

macro_rules! keyed_by {
    ($name:ident, $key:literal) => {
        #[idempotent(store = "idem", key = $key)]
        async fn $name(
            idem: &Idempotency,
            id: u64,
            note: &str,
        ) -> Result<String, idem_core::Error> {
            Ok(format!("{id}-{note}"))
        }
    };
}

keyed_by!(from_macro, "id");

#[tokio::test]
async fn a_key_from_a_macro_keys_by_the_argument_it_names() {
    let idem = handle();
    assert_eq!(from_macro(&idem, 1, "a").await.unwrap(), "1-a");
    let key = idem
        .key(concat!(module_path!(), "::from_macro"))
        .part(&1u64)
        .finish()
        .unwrap();
    assert!(idem.store().get(&key).await.unwrap().is_some());
    let other = from_macro(&idem, 1, "b").await.unwrap_err();
    assert_eq!(other.http_status(), 422, "same key, other note: {other:?}");
}

#[derive(Serialize)]
struct Payment {
    id: uuid::Uuid,
    account: Option<String>,
}

static PAID: AtomicUsize = AtomicUsize::new(0);

#[idempotent(store = "idem", key = "payment.id + payment.account")]
async fn pay(idem: &Idempotency, payment: &Payment) -> Result<usize, idem_core::Error> {
    Ok(PAID.fetch_add(1, Ordering::SeqCst))
}

#[tokio::test]
async fn uuids_and_options_key_a_call_and_none_is_refused_before_the_body() {
    let idem = handle();
    let id = uuid::Uuid::from_u128(7);
    let payment = Payment {
        id,
        account: Some("acc-1".into()),
    };
    pay(&idem, &payment).await.unwrap();
    let key = idem
        .key(concat!(module_path!(), "::pay"))
        .part(id.hyphenated().to_string().as_str())
        .part("acc-1")
        .finish()
        .unwrap();
    assert!(idem.store().get(&key).await.unwrap().is_some());

    let before = PAID.load(Ordering::SeqCst);
    let missing = Payment { id, account: None };
    let refused = pay(&idem, &missing).await.unwrap_err();
    assert_eq!(refused.http_status(), 400, "{refused:?}");
    assert!(
        refused.to_string().contains("`payment.account`"),
        "the error names the operand: {refused}"
    );
    assert_eq!(PAID.load(Ordering::SeqCst), before, "the body did not run");
}

static NOTIFIED: AtomicUsize = AtomicUsize::new(0);

#[idempotent(store = "idem")]
async fn notify(idem: &Idempotency, order: u64, _: &str) -> Result<usize, idem_core::Error> {
    Ok(NOTIFIED.fetch_add(1, Ordering::SeqCst) + order as usize)
}

#[tokio::test]
async fn an_underscore_argument_is_not_part_of_the_call() {
    let idem = handle();
    let first = notify(&idem, 1, "a").await.unwrap();
    assert_eq!(notify(&idem, 1, "b").await.unwrap(), first, "replayed");
}

#[test]
fn the_functions_of_this_binary_have_names_of_their_own() {
    idem_core::check_function_names().unwrap();
}
