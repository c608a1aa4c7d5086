//! `SealedStore`: a store seen through sealing. Keys are digested and values sealed on the
//! way in, opened on the way out.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::keyring::{Keyring, Unopened, MAX_SEAL_OVERHEAD};
use crate::{
    error::StoreError,
    fingerprint::Fingerprint,
    key::Key,
    store::{
        Claim, Completed, InProgress, Lookup, Outcome, OwnerToken, Probe, Record, Reservation,
        Steps, Store, Timestamp,
    },
};

/// The shortest key digest secret accepted, in bytes: HMAC-SHA256's output length.
pub const MIN_KEY_DIGEST_SECRET_BYTES: usize = 32;

/// Stored keys as an HMAC-SHA256 of the whole key under a secret of the application.
#[derive(Clone)]
pub(crate) struct KeyDigest(Hmac<Sha256>);

impl KeyDigest {
    /// Panics on a secret shorter than [`MIN_KEY_DIGEST_SECRET_BYTES`].
    pub(crate) fn new(secret: &[u8]) -> Self {
        assert!(
            secret.len() >= MIN_KEY_DIGEST_SECRET_BYTES,
            "the key digest secret is {} bytes long; it takes at least \
             {MIN_KEY_DIGEST_SECRET_BYTES} random bytes (`openssl rand -base64 32` makes one)",
            secret.len()
        );
        KeyDigest(Hmac::new_from_slice(secret).expect("HMAC takes a key of any length"))
    }

    /// `fingerprint` of a call under `stored_key`, keyed by the secret.
    pub(crate) fn fingerprint(&self, fingerprint: &Fingerprint, stored_key: &Key) -> Fingerprint {
        let mut mac = self.0.clone();
        mac.update(b"idem-fingerprint-v1");
        mac.update(fingerprint.as_bytes());
        mac.update(stored_key.as_str().as_bytes());
        Fingerprint::from_bytes(mac.finalize().into_bytes().into())
    }

    /// HMAC-SHA256 of `input` under the secret: downstream keys, which no one without the
    /// secret can compute.
    pub(crate) fn mac_of(&self, input: &[u8]) -> [u8; 32] {
        let mut mac = self.0.clone();
        mac.update(input);
        mac.finalize().into_bytes().into()
    }

    /// The stored form of `key`: its namespace, which tells services apart and reveals
    /// nothing of a call, then the HMAC of the whole key.
    pub(crate) fn digest(&self, key: &Key) -> Key {
        // A key shown by its digest already (`name_keys_by_digest`) is stored as it is. A key as
        // built has at least two `|` (namespace, name, scope); a digest, one.
        let text = key.as_str();
        if text.matches('|').count() == 1 && text.contains("|#") {
            return key.clone();
        }
        let mut mac = self.0.clone();
        mac.update(key.as_str().as_bytes());
        let digest = Fingerprint::from_bytes(mac.finalize().into_bytes().into()).to_hex();
        let namespace = key.as_str().split('|').next().unwrap_or_default();
        Key::from_encoded(format!("{namespace}|#{digest}"))
    }
}

/// Sealing as a handle applies it: either part may be off.
#[derive(Clone, Default)]
pub(crate) struct Sealing {
    pub(crate) keyring: Option<Arc<Keyring>>,
    pub(crate) digest: Option<KeyDigest>,
    /// Calls name their key by its digest, in errors, logs and their context.
    pub(crate) name_keys_by_digest: bool,
    /// The store's [`sealing_scope`](Store::sealing_scope), bound into every sealed value.
    pub(crate) scope: String,
}

impl Sealing {
    /// `key` as the store keeps it.
    pub(crate) fn stored_key(&self, key: &Key) -> Key {
        match &self.digest {
            Some(digest) => digest.digest(key),
            None => key.clone(),
        }
    }

    /// `outcome`, of the call fingerprinted `fingerprint`, as a sealed store under
    /// `stored_key` keeps it.
    pub(crate) fn stored_outcome(
        &self,
        stored_key: &Key,
        fingerprint: &Fingerprint,
        outcome: Outcome,
    ) -> Outcome {
        let Some(keyring) = &self.keyring else {
            return outcome;
        };
        map_body(&outcome, |kind, body| {
            let context = context(&self.scope, stored_key, Purpose::Outcome(kind, fingerprint));
            Ok::<_, std::convert::Infallible>(Bytes::from(keyring.seal(body, &context)))
        })
        .unwrap_or_else(|never| match never {})
    }

    /// `store` seen through this sealing, or `store` itself when it does nothing.
    pub(crate) fn wrap(&self, store: Arc<dyn Store>) -> Arc<dyn Store> {
        if self.keyring.is_none() && self.digest.is_none() {
            return store;
        }
        Arc::new(SealedStore {
            inner: store,
            sealing: self.clone(),
        })
    }
}

impl Keyring {
    /// The outcome of `record`, a completed record read as stored under `stored_key` in a store
    /// whose [`sealing_scope`](Store::sealing_scope) is `scope`, opened as a handle with this
    /// ring opens it: the same associated data (the store's scope, the stored key, the
    /// outcome's kind, the stored fingerprint), so that what a service replays and what an
    /// operator reads are one thing. For tools that read the store without a handle
    /// (the `idem` command); an aborted outcome has no value and comes back as it is.
    ///
    /// ```
    /// use idem_core::seal::{Keyring, Unopened};
    /// use idem_core::store::{Completed, Outcome};
    /// use idem_core::{Fingerprint, Key, store::Timestamp};
    /// # async fn demo(store: impl idem_core::store::Store) -> Result<(), Box<dyn std::error::Error>> {
    /// let ring = Keyring::from_env("IDEM_KEYRING")?;
    /// let key = Key::parse("idem|shop::payments::charge|-|order-42")?;
    /// if let Some(idem_core::store::Record::Completed(record)) = store.get(&key).await? {
    ///     match ring.open_outcome(&store.sealing_scope(), &key, &record) {
    ///         Ok(Outcome::Ok(value)) => println!("{}", String::from_utf8_lossy(&value)),
    ///         Ok(_) => println!("a stored error, or aborted"),
    ///         Err(Unopened::UnknownKey(id)) => println!("sealed with `{id}`, not in the ring"),
    ///         Err(other) => println!("does not open: {other}"),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn open_outcome(
        &self,
        scope: &str,
        stored_key: &Key,
        record: &Completed,
    ) -> Result<Outcome, Unopened> {
        let fingerprint = record.fingerprint();
        map_body(record.outcome(), |kind, body| {
            self.open_shared(
                body,
                &context(scope, stored_key, Purpose::Outcome(kind, fingerprint)),
            )
        })
    }
}

/// A store whose keys are digested and whose outcomes and step values are sealed.
struct SealedStore {
    inner: Arc<dyn Store>,
    sealing: Sealing,
}

/// What a sealed value is bound to besides its stored key.
enum Purpose<'a> {
    /// A stored outcome, of this kind, of the call with this fingerprint: flipping `ok` and
    /// `err`, or the fingerprint, in the store leaves a value that does not open.
    Outcome(&'static str, &'a Fingerprint),
    Step(&'a str),
}

/// The associated data of a value: the store's sealing scope (its prefix or table), the
/// stored key and what the value is, each part preceded by its length, so that a sealed value
/// moved to another store, key, slot or call does not open.
fn context(scope: &str, stored_key: &Key, purpose: Purpose<'_>) -> Vec<u8> {
    let mut context = b"idem-seal-v2".to_vec();
    let mut part = |bytes: &[u8]| {
        context.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        context.extend_from_slice(bytes);
    };
    part(scope.as_bytes());
    part(stored_key.as_str().as_bytes());
    match purpose {
        Purpose::Outcome(kind, fingerprint) => {
            part(b"outcome");
            part(kind.as_bytes());
            part(fingerprint.as_bytes());
        }
        Purpose::Step(name) => {
            part(b"step");
            part(name.as_bytes());
        }
    }
    context
}

/// `outcome` with its body mapped by `map`, given the outcome's kind.
fn map_body<E>(
    outcome: &Outcome,
    map: impl FnOnce(&'static str, &Bytes) -> Result<Bytes, E>,
) -> Result<Outcome, E> {
    Ok(match outcome {
        Outcome::Ok(body) => Outcome::Ok(map("ok", body)?),
        Outcome::Err(body) => Outcome::Err(map("err", body)?),
        Outcome::Aborted => Outcome::Aborted,
    })
}

impl SealedStore {
    fn key(&self, key: &Key) -> Key {
        self.sealing.stored_key(key)
    }

    fn seal(&self, value: &[u8], stored_key: &Key, purpose: Purpose<'_>) -> Vec<u8> {
        match &self.sealing.keyring {
            Some(keyring) => {
                keyring.seal(value, &context(&self.sealing.scope, stored_key, purpose))
            }
            None => value.to_vec(),
        }
    }

    fn seal_steps(&self, steps: &Steps, stored_key: &Key) -> Steps {
        let mut sealed = Steps::new().with_kept_until(steps.kept_until());
        for (name, value) in steps.iter() {
            sealed.insert(name, self.seal(value, stored_key, Purpose::Step(name)));
        }
        sealed
    }

    fn open_steps(
        &self,
        keyring: &Keyring,
        steps: &Steps,
        stored_key: &Key,
    ) -> Result<Steps, StoreError> {
        let mut opened = Steps::new().with_kept_until(steps.kept_until());
        for (name, value) in steps.iter() {
            let context = context(&self.sealing.scope, stored_key, Purpose::Step(name));
            let value = keyring
                .open(value, &context)
                .map_err(|unopened| StoreError::Corrupt(unopened.to_string()))?;
            opened.insert(name, value);
        }
        Ok(opened)
    }

    /// `record` with its steps opened; as it is when it has none, or when only keys are
    /// digested (its values are stored as they are).
    fn open_in_progress(
        &self,
        record: InProgress,
        stored_key: &Key,
    ) -> Result<InProgress, StoreError> {
        let Some(keyring) = &self.sealing.keyring else {
            return Ok(record);
        };
        if record.steps().is_empty() {
            return Ok(record);
        }
        let steps = self.open_steps(keyring, record.steps(), stored_key)?;
        Ok(record.with_steps(steps))
    }

    /// The longest stored outcome that may open to one of at most `max_outcome` bytes: the
    /// limit the store under this one is given.
    fn stored_max_outcome(&self, max_outcome: Option<usize>) -> Option<usize> {
        match &self.sealing.keyring {
            Some(_) => max_outcome.map(|max| max.saturating_add(MAX_SEAL_OVERHEAD)),
            None => max_outcome,
        }
    }

    /// `record` opened; a completed record's outcome only when it is at most `max_stored`
    /// bytes long as stored, so that a store that does not check the limit itself still
    /// never has an oversized value decrypted.
    fn open_record(
        &self,
        record: Record,
        stored_key: &Key,
        max_stored: Option<usize>,
    ) -> Result<Record, StoreError> {
        Ok(match record {
            Record::InProgress(running) => {
                Record::InProgress(self.open_in_progress(running, stored_key)?)
            }
            Record::Completed(completed) => {
                Record::Completed(self.open_completed(completed, stored_key, max_stored)?)
            }
        })
    }

    /// `completed` opened, as [`open_record`](SealedStore::open_record) opens it.
    fn open_completed(
        &self,
        completed: Completed,
        stored_key: &Key,
        max_stored: Option<usize>,
    ) -> Result<Completed, StoreError> {
        crate::store::check_outcome_len(completed.outcome().body().len() as u64, max_stored)?;
        // Only keys digested: the outcome is stored as it is, and handed on so.
        let Some(keyring) = &self.sealing.keyring else {
            return Ok(completed);
        };
        let outcome = keyring
            .open_outcome(&self.sealing.scope, stored_key, &completed)
            .map_err(|unopened| StoreError::Corrupt(unopened.to_string()))?;
        Ok(Completed::new(
            *completed.fingerprint(),
            outcome,
            completed.expires_at(),
        ))
    }
}

#[async_trait]
impl Store for SealedStore {
    /// Under the stored key, with the limit the store under this one is given; the outcome
    /// opened as a reservation opens it, so that a record moved from another key, scope or
    /// call is refused as corrupt, never served. A sealed value's overhead depends on its
    /// key's name: one that opens over the caller's limit is a miss, for the reservation to
    /// answer.
    fn lookup(&self, key: &Key, probe: &Probe) -> Result<Lookup, StoreError> {
        // The stored key's digest is spared on every call to a store that only misses.
        if !self.inner.looks_up() {
            return Ok(Lookup::Miss);
        }
        let stored = self.key(key);
        let max_stored = self.stored_max_outcome(probe.max_outcome());
        let found = match self
            .inner
            .lookup(&stored, &probe.with_max_outcome(max_stored))?
        {
            Lookup::Completed(found) => self.open_completed(found, &stored, max_stored)?,
            Lookup::Miss => return Ok(Lookup::Miss),
        };
        let opened_len = found.outcome().body().len() as u64;
        if crate::store::check_outcome_len(opened_len, probe.max_outcome()).is_err() {
            return Ok(Lookup::Miss);
        }
        Ok(Lookup::Completed(found))
    }

    fn looks_up(&self) -> bool {
        self.inner.looks_up()
    }

    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        let stored = self.key(key);
        let max_stored = self.stored_max_outcome(claim.max_outcome());
        // A claim carries no steps from the engine; any a caller put in are sealed too.
        let claim = if claim.record().steps().is_empty() {
            claim.clone()
        } else {
            let steps = self.seal_steps(claim.record().steps(), &stored);
            Claim::new(claim.record().clone().with_steps(steps), claim.now())
        }
        .with_max_outcome(max_stored);
        Ok(match self.inner.reserve(&stored, &claim).await? {
            Reservation::Reserved(record) => {
                Reservation::Reserved(self.open_in_progress(record, &stored)?)
            }
            Reservation::TookOver { previous, record } => Reservation::TookOver {
                previous,
                record: self.open_in_progress(record, &stored)?,
            },
            Reservation::Existing(record) => {
                Reservation::Existing(self.open_record(record, &stored, max_stored)?)
            }
        })
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        let stored = self.key(key);
        let outcome =
            self.sealing
                .stored_outcome(&stored, record.fingerprint(), record.outcome().clone());
        let sealed = Completed::new(*record.fingerprint(), outcome, record.expires_at());
        self.inner.complete(&stored, owner, &sealed).await
    }

    async fn release(&self, key: &Key, owner: &OwnerToken) -> Result<(), StoreError> {
        self.inner.release(&self.key(key), owner).await
    }

    async fn record_step(
        &self,
        key: &Key,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) -> Result<(), StoreError> {
        let stored = self.key(key);
        let sealed = self.seal(value, &stored, Purpose::Step(name));
        self.inner
            .record_step(&stored, owner, name, &sealed, kept_until)
            .await
    }

    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Timestamp,
    ) -> Result<(), StoreError> {
        self.inner.renew(&self.key(key), owner, lease_until).await
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        let stored = self.key(key);
        match self.inner.get(&stored).await? {
            Some(record) => Ok(Some(self.open_record(record, &stored, None)?)),
            None => Ok(None),
        }
    }

    /// Asks the store under the stored key; nothing is read, so nothing is opened.
    async fn contains(&self, key: &Key) -> Result<bool, StoreError> {
        self.inner.contains(&self.key(key)).await
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        self.inner.delete(&self.key(key)).await
    }

    /// Under the stored key; a record is told apart by fields sealing leaves as they are
    /// (owner, fencing token, fingerprint, expiry), so the opened record read is the condition.
    async fn delete_if(&self, key: &Key, expected: &Record) -> Result<bool, StoreError> {
        self.inner.delete_if(&self.key(key), expected).await
    }

    async fn changed(&self, key: &Key, timeout: Duration) -> Result<(), StoreError> {
        self.inner.changed(&self.key(key), timeout).await
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    /// The store's own listing: keys as stored (digests, under a key digest) and values
    /// sealed, as an operator without the keyring sees them.
    fn inventory(&self) -> Option<&dyn crate::store::Inventory> {
        self.inner.inventory()
    }

    fn sealing_scope(&self) -> String {
        self.inner.sealing_scope()
    }
}
