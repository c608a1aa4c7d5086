//! One shard of the memory store: a map from key to record, behind a mutex.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use idem_core::store::{check_outcome_len, judge_found, judge_reserve};
use idem_core::{
    store::{Completed, Lookup, OwnerToken, Probe, Record, Reservation, Timestamp},
    Key, StoreError,
};
use tokio::sync::Notify;

use super::capacity::{stops_counting_at, Capacity};

/// A record and the waiters that want to hear when it changes.
pub(crate) struct Slot {
    pub(crate) record: Record,
    /// Created when the first waiter arrives; woken on every change that ends the record's
    /// in-progress state.
    waiters: Option<Arc<Notify>>,
}

impl Slot {
    fn new(record: Record) -> Self {
        Slot {
            record,
            waiters: None,
        }
    }

    fn wake(&self) {
        if let Some(waiters) = &self.waiters {
            waiters.notify_waiters();
        }
    }

    /// The notifier for the current in-progress owner, or `None` if the record is finished.
    pub(crate) fn in_progress_waiters(&mut self) -> Option<(OwnerToken, Arc<Notify>)> {
        let Record::InProgress(in_progress) = &self.record else {
            return None;
        };
        let owner = in_progress.owner().clone();
        let waiters = self.waiters.get_or_insert_with(Default::default).clone();
        Some((owner, waiters))
    }
}

/// What a key holds for a caller at some time: the one rule of which record a lookup serves
/// and a reservation finds standing as a completed call.
enum Standing<'a> {
    /// No record: a new key.
    Vacant,
    /// A completed record, live: replayed to its own call, a mismatch to another.
    Completed(&'a Completed),
    /// Any other record (in progress, or completed and expired), for the reservation to judge.
    Other(&'a Record),
}

/// The record in `slot` as it stands at `now`.
fn standing(slot: Option<&Slot>, now: Timestamp) -> Standing<'_> {
    let Some(slot) = slot else {
        return Standing::Vacant;
    };
    match &slot.record {
        Record::Completed(done) if slot.record.is_live(now) => Standing::Completed(done),
        record => Standing::Other(record),
    }
}

/// A shard's map.
#[derive(Default)]
pub(crate) struct Shard {
    slots: Mutex<HashMap<Key, Slot>>,
}

impl Shard {
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<Key, Slot>> {
        // No code panics while holding the lock, so a poisoned lock still holds consistent data.
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The completed record under `key` if it is live at the probe's time and within its
    /// longest outcome; a copy that shares the stored outcome's bytes.
    pub(crate) fn lookup(&self, key: &Key, probe: &Probe) -> Lookup {
        let slots = self.lock();
        match standing(slots.get(key), probe.now()) {
            Standing::Completed(done)
                if check_outcome_len(done.outcome().body().len() as u64, probe.max_outcome())
                    .is_ok() =>
            {
                Lookup::Completed(done.clone())
            }
            _ => Lookup::Miss,
        }
    }

    /// Reserves `key` for `claim`. A new key takes a record's room from `room`; `None` when
    /// there is none left. What to do is idem-core's [`judge_reserve`]; this shard only writes
    /// it under its lock. A completed record over the claim's longest outcome is refused
    /// ([`judge_found`]); the record a reservation answers with shares its bytes with the
    /// stored one.
    pub(crate) fn reserve(
        &self,
        key: &Key,
        claim: &idem_core::store::Claim,
        room: &Capacity,
    ) -> Result<Option<Reservation>, StoreError> {
        let mut slots = self.lock();
        let found = match standing(slots.get(key), claim.now()) {
            Standing::Vacant => None,
            Standing::Completed(done) => Some(Record::Completed(done.clone())),
            Standing::Other(record) => Some(record.clone()),
        };
        if let Some(record) = &found {
            // Another call's record over the limit: answered without its outcome.
            if let Some(unread) = judge_found(record, claim)? {
                return Ok(Some(Reservation::Existing(unread)));
            }
        }
        let new_key = found.is_none();
        let judgement = judge_reserve(found, claim);
        let Some(written) = judgement.record_to_write(claim) else {
            return Ok(Some(judgement.into_reservation(claim)));
        };
        if new_key && !room.take() {
            return Ok(None);
        }
        let written = Record::InProgress(written);
        room.note(&written);
        if let Some(old) = slots.insert(key.clone(), Slot::new(written)) {
            old.wake();
        }
        Ok(Some(judgement.into_reservation(claim)))
    }

    /// Applies `change` to `owner`'s in-progress record; `false` if `owner` does not hold it.
    pub(crate) fn update_owned(
        &self,
        key: &Key,
        owner: &OwnerToken,
        change: impl FnOnce(&mut HashMap<Key, Slot>),
    ) -> bool {
        let mut slots = self.lock();
        match slots.get(key).map(|slot| &slot.record) {
            Some(Record::InProgress(in_progress)) if in_progress.owner() == owner => {
                change(&mut slots);
                true
            }
            _ => false,
        }
    }

    pub(crate) fn replace(
        slots: &mut HashMap<Key, Slot>,
        key: &Key,
        record: Record,
        room: &Capacity,
    ) {
        room.note(&record);
        if let Some(old) = slots.insert(key.clone(), Slot::new(record)) {
            old.wake();
        }
    }

    /// Removes the record under `key`, giving its room back to `room`.
    pub(crate) fn remove(slots: &mut HashMap<Key, Slot>, key: &Key, room: &Capacity) {
        if let Some(old) = slots.remove(key) {
            old.wake();
            room.give_back(1);
        }
    }

    /// Releases `owner`'s record under `key`: removes it, or, when it holds steps, keeps it
    /// released for the same call to resume.
    pub(crate) fn release(slots: &mut HashMap<Key, Slot>, key: &Key, room: &Capacity) {
        let Some(slot) = slots.get_mut(key) else {
            return;
        };
        match &slot.record {
            Record::InProgress(held) if !held.steps().is_empty() => {
                slot.record = Record::InProgress(held.clone().released());
                room.note(&slot.record);
                slot.wake();
            }
            _ => Self::remove(slots, key, room),
        }
    }

    /// Adds step `name` to the in-progress record under `key`.
    pub(crate) fn record_step(
        slots: &mut HashMap<Key, Slot>,
        key: &Key,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) {
        if let Some(Slot {
            record: Record::InProgress(in_progress),
            ..
        }) = slots.get_mut(key)
        {
            let steps = in_progress.steps_mut();
            steps.insert(name, value.to_vec());
            steps.keep_until(kept_until);
        }
    }

    /// Moves `owner`'s lease to `lease_until`; `false` if `owner` does not hold the key or
    /// released it with steps.
    pub(crate) fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Timestamp,
        room: &Capacity,
    ) -> bool {
        let mut slots = self.lock();
        let Some(slot) = slots.get_mut(key) else {
            return false;
        };
        let Record::InProgress(held) = &mut slot.record else {
            return false;
        };
        if held.owner() != owner || held.is_released() {
            return false;
        }
        held.set_lease_until(lease_until);
        // A clock that stepped back may have moved the lease earlier.
        room.note(&slot.record);
        true
    }

    /// Drops every completed record that expired before `now`, and every abandoned in-progress
    /// record, giving their room back; returns how many, and when the earliest record kept
    /// stops counting.
    pub(crate) fn purge(&self, now: Timestamp, room: &Capacity) -> (usize, Option<Timestamp>) {
        let mut slots = self.lock();
        let before = slots.len();
        let mut earliest: Option<Timestamp> = None;
        slots.retain(|_, slot| {
            let keep = match &slot.record {
                Record::InProgress(in_progress) => !in_progress.is_abandoned(now),
                record => record.is_live(now),
            };
            if keep {
                let at = stops_counting_at(&slot.record);
                earliest = Some(earliest.map_or(at, |e| e.min(at)));
            } else {
                slot.wake();
            }
            keep
        });
        let purged = before - slots.len();
        room.give_back(purged);
        (purged, earliest)
    }

    /// The first `limit` records in key order whose keys start with `prefix` and sort after
    /// `after`: only those are copied.
    pub(crate) fn matching(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Vec<(Key, Record)> {
        let slots = self.lock();
        let mut keys: Vec<&Key> = slots
            .keys()
            .filter(|key| key.as_str().starts_with(prefix))
            .filter(|key| after.is_none_or(|after| key.as_str() > after))
            .collect();
        if keys.len() > limit && limit > 0 {
            keys.select_nth_unstable(limit - 1);
        }
        keys.truncate(limit);
        keys.into_iter()
            .map(|key| (key.clone(), slots[key].record.clone()))
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use idem_core::{
        store::{Claim, Completed, InProgress, Outcome},
        Fingerprint,
    };

    use super::*;

    fn key(name: &str) -> Key {
        idem_core::Idempotency::new(crate::memory::MemoryStore::new())
            .key("orders")
            .part(name)
            .finish()
            .unwrap()
    }

    fn claim(now: Timestamp) -> Claim {
        let lease_until = now + Duration::from_secs(30);
        let record = InProgress::new(OwnerToken::generate(), Fingerprint::empty(), lease_until);
        Claim::new(record, now)
    }

    #[test]
    fn a_new_key_is_reserved_while_there_is_room_and_refused_once_there_is_none() {
        let (shard, room) = (Shard::default(), Capacity::new(1));
        let now = Timestamp::from_millis(1_800_000_000_000);
        let first = claim(now);
        assert_eq!(
            shard.reserve(&key("o-1"), &first, &room).unwrap(),
            Some(Reservation::Reserved(first.record().clone()))
        );
        assert_eq!(
            shard.reserve(&key("o-2"), &claim(now), &room).unwrap(),
            None
        );
        assert_eq!(shard.len(), 1);
    }

    #[test]
    fn only_an_in_progress_record_has_waiters() {
        let (shard, room) = (Shard::default(), Capacity::new(2));
        let now = Timestamp::from_millis(1_800_000_000_000);
        let held = claim(now);
        shard.reserve(&key("o-1"), &held, &room).unwrap();
        let mut slots = shard.lock();
        let slot = slots.get_mut(&key("o-1")).unwrap();
        let (owner, _waiters) = slot.in_progress_waiters().expect("waiters");
        assert_eq!(&owner, held.record().owner());

        let done = Completed::new(Fingerprint::empty(), Outcome::ok(Vec::new()), now);
        Shard::replace(&mut slots, &key("o-1"), Record::Completed(done), &room);
        let slot = slots.get_mut(&key("o-1")).unwrap();
        assert!(slot.in_progress_waiters().is_none());
    }
}
