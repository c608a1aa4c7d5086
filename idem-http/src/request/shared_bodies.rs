//! One copy of a request body for every request in flight that sent the same bytes: the
//! duplicates waiting for a key to be answered hold the first one's body, not one each.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use bytes::Bytes;
use idem_core::Fingerprint;

/// Bodies below this size are kept as they are: sharing them would save less than the
/// bookkeeping costs.
pub(crate) const SHARED_FROM_BYTES: usize = 16 * 1024;

/// The large request bodies in flight, by the digest of their request as sent
/// ([`raw_digest`](crate::request::raw_digest::raw_digest)).
#[derive(Debug, Default)]
pub(crate) struct SharedBodies {
    bodies: Arc<Mutex<HashMap<Fingerprint, Weak<Bytes>>>>,
}

impl SharedBodies {
    /// `body`, or the same bytes already held by a request in flight whose digest is
    /// `fingerprint`; the returned guard keeps them findable until the request ends.
    pub(crate) fn share(
        &self,
        fingerprint: Fingerprint,
        body: Bytes,
    ) -> (Bytes, Option<SharedBody>) {
        if body.len() < SHARED_FROM_BYTES {
            return (body, None);
        }
        let mut bodies = lock(&self.bodies);
        let held = bodies.get(&fingerprint).and_then(Weak::upgrade);
        let shared = match held {
            // Only the very same bytes, which one digest all but promises: checked, since the
            // handler gets the bytes its request sent, whatever a collision would say.
            Some(held) if *held == body => held,
            Some(_) => return (body, None),
            None => {
                let fresh = Arc::new(body);
                bodies.insert(fingerprint, Arc::downgrade(&fresh));
                fresh
            }
        };
        let bytes = Bytes::clone(&shared);

        let guard = SharedBody {
            body: Some(shared),
            fingerprint,
            bodies: self.bodies.clone(),
        };
        (bytes, Some(guard))
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.bodies).len()
    }
}

/// Keeps a shared body findable while its request is in flight.
#[derive(Debug)]
pub(crate) struct SharedBody {
    /// Taken out and dropped under the lock, so that counting the holders left is exact.
    body: Option<Arc<Bytes>>,
    fingerprint: Fingerprint,
    bodies: Arc<Mutex<HashMap<Fingerprint, Weak<Bytes>>>>,
}

impl Drop for SharedBody {
    fn drop(&mut self) {
        let mut bodies = lock(&self.bodies);
        let Some(body) = self.body.take() else {
            return;
        };
        // Counted and dropped under the lock, where every new holder is made: the last one
        // out removes the entry, if it is still this body's.
        let last = Arc::strong_count(&body) == 1;
        let ours = bodies
            .get(&self.fingerprint)
            .is_some_and(|held| std::ptr::eq(held.as_ptr(), Arc::as_ptr(&body)));
        drop(body);
        if last && ours {
            bodies.remove(&self.fingerprint);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(byte: u8) -> Bytes {
        Bytes::from(vec![byte; SHARED_FROM_BYTES])
    }

    #[test]
    fn the_same_bytes_in_flight_are_held_once() {
        let shared = SharedBodies::default();
        let fingerprint = Fingerprint::of(&"request").unwrap();
        let (first, first_guard) = shared.share(fingerprint, body(1));
        let (second, second_guard) = shared.share(fingerprint, body(1));
        assert_eq!(first.as_ptr(), second.as_ptr());
        drop(first_guard);
        let (third, third_guard) = shared.share(fingerprint, body(1));
        assert_eq!(
            third.as_ptr(),
            second.as_ptr(),
            "held while any request is in flight"
        );
        drop((second_guard, third_guard));
        assert_eq!(shared.len(), 0, "forgotten once the last request ends");
    }

    #[test]
    fn other_bytes_or_small_bodies_are_kept_as_they_are() {
        let shared = SharedBodies::default();
        let fingerprint = Fingerprint::of(&"request").unwrap();
        let (first, _guard) = shared.share(fingerprint, body(1));
        let (other, none) = shared.share(fingerprint, body(2));
        assert_ne!(first.as_ptr(), other.as_ptr());
        assert!(none.is_none());
        let small = Bytes::from(vec![1; SHARED_FROM_BYTES - 1]);
        let (kept, none) = shared.share(fingerprint, small.clone());
        assert_eq!(kept.as_ptr(), small.as_ptr());
        assert!(none.is_none());
    }
}
