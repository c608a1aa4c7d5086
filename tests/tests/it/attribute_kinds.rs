//! What `#[idempotent]` can be put on and how it names each record: scopes, methods of two
//! types, a handle passed as an argument, trait impls, generic functions and types, and the
//! default names. Under `clippy::all` and `unused_qualifications` so that clippy checks the
//! generated code too.
#![deny(warnings, unused_qualifications, clippy::all)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::attribute_fixtures::{receipt, PayError, Payments};
use idem_core::{idempotent, Idempotency};
use idem_stores::memory::MemoryStore;
use serde::Serialize;

#[tokio::test]
async fn scope_separates_tenants() {
    let payments = Payments::new();
    assert_eq!(
        payments.charge_for("acme", "o-1").await,
        Ok(receipt("o-1", 1, 1))
    );
    assert_eq!(
        payments.charge_for("globex", "o-1").await,
        Ok(receipt("o-1", 1, 2))
    );
    assert_eq!(
        payments.charge_for("acme", "o-1").await,
        Ok(receipt("o-1", 1, 1))
    );
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn two_functions_with_the_same_key_do_not_collide() {
    let payments = Payments::new();
    assert_eq!(payments.charge("o-1", 5).await, Ok(receipt("o-1", 5, 1)));
    assert_eq!(payments.refund("o-1", 5).await, Ok(receipt("o-1", 5, 2)));
    assert_eq!(payments.charge("o-1", 5).await, Ok(receipt("o-1", 5, 1)));
    assert_eq!(payments.refund("o-1", 5).await, Ok(receipt("o-1", 5, 2)));
    assert_eq!(payments.runs(), 2);
}

/// Two types in one module with a method of the same name.
struct Orders(Arc<Payments>);
struct Invoices(Arc<Payments>);

#[idempotent]
impl Orders {
    #[idempotent(store = "self.0.idem", key = "id", skip = "self")]
    async fn create(&self, id: u64) -> Result<usize, PayError> {
        Ok(self.0.body("order", id).await.run)
    }
}

#[idempotent]
impl Invoices {
    #[idempotent(store = "self.0.idem", key = "id", skip = "self")]
    async fn create(&self, id: u64) -> Result<usize, PayError> {
        Ok(self.0.body("invoice", id).await.run)
    }
}

#[tokio::test]
async fn methods_of_two_types_with_the_same_name_do_not_collide() {
    let payments = Payments::new();
    let (orders, invoices) = (Orders(payments.clone()), Invoices(payments.clone()));
    assert_eq!(orders.create(7).await, Ok(1));
    assert_eq!(invoices.create(7).await, Ok(2));
    assert_eq!(orders.create(7).await, Ok(1));
    assert_eq!(invoices.create(7).await, Ok(2));
}

/// A request context that carries the handle next to data that differs on every request.
#[derive(Serialize)]
struct RequestContext {
    #[serde(skip)]
    idem: Idempotency,
    request_id: u64,
}

/// A free function whose handle comes from an argument: that argument is the root of `store`,
/// so it is left out of the fingerprint.
#[idempotent(store = "ctx.idem", key = "\"fixed\"", skip = "runs")]
async fn send_welcome_mail(
    ctx: &RequestContext,
    runs: &AtomicUsize,
    to: &str,
) -> Result<usize, PayError> {
    let _ = to;
    Ok(runs.fetch_add(1, Ordering::SeqCst) + 1)
}

#[tokio::test]
async fn the_handle_argument_is_not_fingerprinted() {
    let idem = Idempotency::new(MemoryStore::new());
    let request = |request_id| RequestContext {
        idem: idem.clone(),
        request_id,
    };
    let runs = AtomicUsize::new(0);
    assert_eq!(
        send_welcome_mail(&request(1), &runs, "a@example.com").await,
        Ok(1)
    );
    // Same key, same `to`, another request id in the context: a replay, so the context (which
    // serialises differently) is not fingerprinted.
    assert_eq!(
        send_welcome_mail(&request(2), &runs, "a@example.com").await,
        Ok(1)
    );
    // Same key, other `to`: a mismatch, so `to` is fingerprinted.
    assert_eq!(
        send_welcome_mail(&request(3), &runs, "b@example.com").await,
        Err(PayError::Idem(422))
    );
}

#[tokio::test]
async fn name_is_the_stable_name_in_the_key() {
    let payments = Payments::new();
    payments.charge_briefly("o-1", 5).await.unwrap();
    let key = payments
        .idem
        .key("payments.charge.v1")
        .part("o-1")
        .finish()
        .unwrap();
    assert!(
        payments.idem.store().get(&key).await.unwrap().is_some(),
        "the record is under the given name: {key}"
    );
}

#[tokio::test]
async fn fingerprint_lists_the_fingerprinted_arguments() {
    let payments = Payments::new();
    let first = payments.charge_with_note("o-1", 5, "first try").await;
    assert_eq!(first, Ok(receipt("o-1", 5, 1)));
    assert_eq!(
        payments.charge_with_note("o-1", 5, "second try").await,
        first,
        "`note` is not fingerprinted: a replay"
    );
    assert_eq!(
        payments.charge_with_note("o-1", 6, "first try").await,
        Err(PayError::Idem(422)),
        "`amount` is: a mismatch"
    );
    assert_eq!(payments.runs(), 1);
}

/// A native `async fn` in a trait.
trait Charger {
    async fn charge(&self, order: &str) -> Result<usize, PayError>;
}

/// The same under `#[async_trait]`, whose boxed future the attribute wraps.
#[async_trait::async_trait]
trait BoxedCharger: Send + Sync {
    async fn charge(&self, order: &str) -> Result<usize, PayError>;
}

#[idempotent]
impl Charger for Payments {
    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    async fn charge(&self, order: &str) -> Result<usize, PayError> {
        Ok(self.body(order, 1).await.run)
    }
}

#[async_trait::async_trait]
#[idempotent]
impl BoxedCharger for Payments {
    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    async fn charge(&self, order: &str) -> Result<usize, PayError> {
        Ok(self.body(order, 1).await.run)
    }
}

#[tokio::test]
async fn trait_impls_native_and_async_trait_are_idempotent_and_named_apart() {
    let payments = Payments::new();
    assert_eq!(Charger::charge(&*payments, "o-1").await, Ok(1));
    assert_eq!(Charger::charge(&*payments, "o-1").await, Ok(1));

    let boxed: Arc<dyn BoxedCharger> = payments.clone();
    assert_eq!(boxed.charge("o-1").await, Ok(2));
    assert_eq!(boxed.charge("o-1").await, Ok(2));
    assert_eq!(payments.runs(), 2);
}

/// A generic function: each instantiation has records of its own.
#[idempotent(store = "idem", key = "id", skip = "runs")]
async fn load<T: Default + Serialize + serde::de::DeserializeOwned>(
    idem: &Idempotency,
    runs: &AtomicUsize,
    id: u64,
) -> Result<(T, usize), PayError> {
    let _ = id;
    Ok((T::default(), runs.fetch_add(1, Ordering::SeqCst) + 1))
}

#[tokio::test]
async fn instantiations_of_a_generic_function_do_not_collide() {
    let idem = Idempotency::new(MemoryStore::new());
    let runs = AtomicUsize::new(0);
    assert_eq!(
        load::<String>(&idem, &runs, 1).await,
        Ok((String::new(), 1))
    );
    assert_eq!(load::<u64>(&idem, &runs, 1).await, Ok((0, 2)));
    assert_eq!(
        load::<String>(&idem, &runs, 1).await,
        Ok((String::new(), 1))
    );
    assert_eq!(load::<u64>(&idem, &runs, 1).await, Ok((0, 2)));
}

/// A generic type: its methods are named after the impl as written, with the type `T` stands
/// for in the call.
struct Drawer<T>(Idempotency, std::marker::PhantomData<T>);

#[idempotent]
impl<T: Default + Serialize + serde::de::DeserializeOwned> Drawer<T> {
    #[idempotent(store = "self.0", key = "id", skip = "self")]
    async fn open(&self, id: u64) -> Result<T, PayError> {
        let _ = id;
        Ok(T::default())
    }
}

/// Whether `idem`'s store has a record under function name `name` and key part `part`.
async fn recorded<P: idem_core::KeyPart + ?Sized>(
    idem: &Idempotency,
    name: &str,
    part: &P,
) -> bool {
    let key = idem.key(name).part(part).finish().unwrap();
    idem.store().get(&key).await.unwrap().is_some()
}

/// The default name is spelt from the source, not by the compiler: written out here in full, so
/// that any change to the rule (which would orphan every stored record) fails this test.
#[tokio::test]
async fn default_names_are_the_module_the_impl_the_function_and_the_instantiation() {
    let payments = Payments::new();
    let idem = &payments.idem;
    payments.charge("o-1", 1).await.unwrap();
    Charger::charge(&*payments, "o-2").await.unwrap();
    BoxedCharger::charge(&*payments, "o-3").await.unwrap();
    let runs = AtomicUsize::new(0);
    load::<String>(idem, &runs, 4).await.unwrap();
    load::<u64>(idem, &runs, 4).await.unwrap();
    Drawer::<u8>(idem.clone(), std::marker::PhantomData)
        .open(5)
        .await
        .unwrap();
    let request = RequestContext {
        idem: idem.clone(),
        request_id: 1,
    };
    send_welcome_mail(&request, &runs, "a@example.com")
        .await
        .unwrap();

    for (name, part) in [
        (
            concat!(
                env!("CARGO_CRATE_NAME"),
                "::attribute_fixtures::Payments::charge"
            ),
            "o-1",
        ),
        (
            concat!(module_path!(), "::<Payments as Charger>::charge"),
            "o-2",
        ),
        (
            concat!(module_path!(), "::<Payments as BoxedCharger>::charge"),
            "o-3",
        ),
        (concat!(module_path!(), "::send_welcome_mail"), "fixed"),
    ] {
        assert!(recorded(idem, name, part).await, "no record under {name}");
    }
    for (name, part) in [
        (
            concat!(module_path!(), "::load[T = alloc::string::String]"),
            4u64,
        ),
        (concat!(module_path!(), "::load[T = u64]"), 4),
        (concat!(module_path!(), "::Drawer<T>::open[T = u8]"), 5),
    ] {
        assert!(recorded(idem, name, &part).await, "no record under {name}");
    }
}
