//! Methods (`&self`, `&mut self`, by value), generic functions and generic impls. Each impl with
//! idempotent methods carries `#[idempotent]` too, which names the methods after it.

use std::fmt::Display;
use std::sync::Arc;

use idem_core::{idempotent, Idempotency};
use serde::{de::DeserializeOwned, Serialize};

struct Service {
    idem: Idempotency,
    tenant: String,
}

#[idempotent]
impl Service {
    #[idempotent(store = "self.idem", scope = "self.tenant", key = "order")]
    async fn charge(&self, order: &str, amount: u64) -> Result<u64, idem_core::Error> {
        Ok(amount + order.len() as u64)
    }

    #[idempotent(store = "self.idem", key = "self.tenant + order")]
    async fn charge_mut(&mut self, order: String) -> Result<String, idem_core::Error> {
        self.tenant.push('!');
        Ok(order)
    }

    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    async fn charge_arc(self: Arc<Self>, order: u32) -> Result<u32, idem_core::Error> {
        Ok(order)
    }

    #[idempotent(store = "self.idem", key = "id", skip = "self")]
    async fn load<T: DeserializeOwned + Serialize + Default + Send>(
        &self,
        id: u64,
    ) -> Result<T, idem_core::Error> {
        let _ = id;
        Ok(T::default())
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Ticket {
    id: u64,
}

#[idempotent]
impl Ticket {
    /// Associated functions without `self` are named after the impl as well.
    #[idempotent(key = "id")]
    async fn open(id: u64) -> Result<Self, idem_core::Error> {
        Ok(Ticket { id })
    }
}

struct Repo<T> {
    idem: Idempotency,
    items: Vec<T>,
}

#[idempotent]
impl<T: Serialize + DeserializeOwned + Clone + Send + Sync> Repo<T> {
    #[idempotent(store = "self.idem", fingerprint = "item")]
    async fn insert(&self, item: T) -> Result<Vec<T>, idem_core::Error> {
        let mut items = self.items.clone();
        items.push(item);
        Ok(items)
    }
}

#[idempotent(key = "id")]
async fn generic<'a, K, V>(id: &'a K, value: V) -> Result<V, idem_core::Error>
where
    K: idem_core::KeyPart + Display + Serialize + ?Sized,
    V: Serialize + DeserializeOwned,
{
    let _ = id.to_string();
    Ok(value)
}

#[idempotent(key = "id")]
async fn with_impl_argument(id: u64, tags: impl Serialize) -> Result<u64, idem_core::Error> {
    let _ = serde_json::to_string(&tags);
    Ok(id)
}

fn assert_send<F: std::future::Future + Send>(future: F) -> F {
    future
}

fn main() {
    let idem = Idempotency::new(idem_stores::memory::MemoryStore::new());
    let mut service = Service {
        idem,
        tenant: "acme".into(),
    };
    drop(assert_send(service.charge("o-1", 1)));
    drop(service.charge_mut("o-1".into()));
    let service = Arc::new(service);
    drop(assert_send(service.clone().charge_arc(1)));
    drop(service.load::<Vec<u8>>(1));
    let repo = Repo {
        idem: service.idem.clone(),
        items: vec![1u8],
    };
    drop(assert_send(repo.insert(2)));
    drop(assert_send(generic("k", 1u64)));
    drop(with_impl_argument(1, ["a", "b"]));
    drop(Ticket::open(1));
}
