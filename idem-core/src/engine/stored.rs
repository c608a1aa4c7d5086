//! What the engine runs calls with (the store as each side sees it, the clock, the namespace,
//! the replay cache and the quota), and a call and its key as the store keeps them.

use std::sync::Arc;

use crate::{
    call::{context::StoredForm, Call},
    clock::Clock,
    key::Key,
    quota::Quota,
    replay_cache::ReplayCache,
    store::Store,
};

/// The engine's parts, which a handle configures and every clone of it shares.
#[derive(Clone)]
pub(crate) struct Engine {
    /// The store as the engine sees it: timed, then through sealing when it is on.
    pub(crate) store: Arc<dyn Store>,
    /// The store as [`Idempotency::store`](crate::Idempotency::store) shows it: through sealing, untimed, so
    /// that a handle built on it times each operation once. A call that nothing listens to
    /// runs on it too.
    pub(crate) view: Arc<dyn Store>,
    /// The store as given, and timed.
    #[cfg(feature = "seal")]
    pub(crate) given: Arc<dyn Store>,
    #[cfg(feature = "seal")]
    pub(crate) unsealed: Arc<dyn Store>,
    #[cfg(feature = "seal")]
    pub(crate) sealing: crate::seal::Sealing,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) namespace: Arc<str>,
    pub(crate) replay_cache: Option<Arc<ReplayCache>>,
    pub(crate) quota: Option<Arc<dyn Quota>>,
    /// What a call asks to learn whether a `metrics` recorder times its store operations.
    pub(crate) telemetry_probe: metrics::Key,
}

impl Engine {
    /// `key` as the store keeps it: the same key, or its digest under a key digest.
    pub(crate) fn stored_key(&self, key: &Key) -> Key {
        #[cfg(feature = "seal")]
        return self.sealing.stored_key(key);
        #[cfg(not(feature = "seal"))]
        key.clone()
    }

    /// `call` with its fingerprint (or its request digest, and the fingerprint once computed)
    /// keyed by the digest secret, when there is one, and its key
    /// shown by its digest when clear keys are hidden.
    pub(crate) fn stored_call(&self, call: Call) -> Call {
        #[cfg(feature = "seal")]
        if let Some(digest) = &self.sealing.digest {
            let mut call = call;
            let stored_key = digest.digest(&call.key);
            // Keyed by the secret, so that no one who reads the store can test a guess of a
            // call's arguments (or of its request) against it, and by the key, so that equal
            // arguments under two keys do not show as such.
            use crate::call::arguments::Arguments;
            call.arguments = match call.arguments {
                Arguments::Known(fingerprint) => {
                    Arguments::Known(digest.fingerprint(&fingerprint, &stored_key))
                }
                Arguments::Deferred { request, canonical } => {
                    let (digest, stored_key) = (digest.clone(), stored_key.clone());
                    Arguments::Deferred {
                        request: digest.fingerprint(&request, &stored_key),
                        canonical: Arc::new(move || {
                            canonical()
                                .map(|fingerprint| digest.fingerprint(&fingerprint, &stored_key))
                        }),
                    }
                }
            };
            if self.sealing.name_keys_by_digest {
                call.clear_scope = call.key.scope().map(str::to_owned);
                call.key = stored_key;
            }
            return call;
        }
        call
    }

    /// What the store keeps of a call under `key`: its stored key and the sealing of its
    /// outcome, for the call's context.
    pub(crate) fn stored_form(&self, key: &Key) -> StoredForm {
        StoredForm {
            key: self.stored_key(key),
            #[cfg(feature = "seal")]
            sealing: self.sealing.clone(),
        }
    }

    /// The key a completed record is cached under: its stored form, so that `forget` finds
    /// it from the key in clear or from its digest. Borrowed when that is the key itself.
    pub(crate) fn cache_key<'a>(&self, key: &'a Key) -> std::borrow::Cow<'a, Key> {
        #[cfg(feature = "seal")]
        if self.sealing.digest.is_some() {
            return std::borrow::Cow::Owned(self.sealing.stored_key(key));
        }
        std::borrow::Cow::Borrowed(key)
    }
}
