//! Downstream keys: the idempotency key a body sends to a service it calls, derived from its own
//! call and the operation, so that every attempt of the call sends the same one.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use crate::call::context::{context, CallContext};

/// What every downstream key starts with: it tells whoever reads a provider's logs where the key
/// came from.
pub const DOWNSTREAM_KEY_PREFIX: &str = "idem-";

/// The label every derivation starts with, so that no other digest idem makes can be one.
const DOMAIN: &[u8] = b"idem-downstream-key-v1";

/// The idempotency key an idempotent body sends to a downstream service (a payment provider, a
/// ledger, another team's API) for one operation: see [`downstream_key`].
///
/// It reads `idem-` and 52 characters of base32 (lowercase, no padding) of a 256-bit digest:
/// 57 visible ASCII characters, within the `Idempotency-Key` grammar, Stripe's 255 and the 64
/// that the strictest providers accept.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DownstreamKey(String);

impl DownstreamKey {
    /// The key's text: what to send as the provider's idempotency key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DownstreamKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for DownstreamKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl AsRef<str> for DownstreamKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<DownstreamKey> for String {
    fn from(key: DownstreamKey) -> String {
        key.0
    }
}

/// The key to send to a downstream service for `operation` of the idempotent call running on
/// this task, or `None` outside one (see [`context`]).
///
/// A body whose process dies after a provider acted and before the body's outcome (or the
/// [step](crate::step)) was recorded runs again when a retry takes its key over. Sent with a
/// fresh key, the provider would act a second time; sent with this one, it recognises the
/// operation and answers as it did the first time. So the key is:
///
/// - **the same in every attempt** of the call: after a takeover, in another process, from a
///   handle built anew on the same store. It is derived from the call's stored key (namespace,
///   function name, principal scope and key parts), its fingerprint (the arguments: after a
///   release, the same key with other arguments is another call) and `operation`, never from
///   an owner token, an attempt or a clock;
/// - **different for every operation** of the call, for every call, and for every principal
///   (scope) a key is built under;
/// - **unlinkable**: a digest, which tells the provider nothing of the call's key or
///   arguments. Under a handle with
///   [`with_key_digest`](crate::Idempotency::with_key_digest) (feature `seal`) it is an
///   HMAC-SHA256 under that secret, which no one without it can compute. Without one it is a
///   SHA-256 of the stored key and the operation: anyone who can guess a call's key (an order
///   number, say, and the function's name) can compute its downstream keys and recognise them
///   in a provider's logs. Set a digest secret wherever that matters. (The sealing
///   [`Keyring`](crate::seal::Keyring) is not used: it rotates, and a key that changed with a
///   rotation between two attempts would be a new operation to the provider.)
///
/// `operation` names the effect within the call (`"charge"`, `"refund"`,
/// `"POST /v1/payments"`): calling `downstream_key` twice with one name gives one key, which is
/// what a retry of the same request needs. A deliberate second effect of the same kind (two
/// charges of one order) takes a name of its own (`"charge-deposit"`, `"charge-balance"`), or
/// [`next_downstream_key`], which numbers the uses of a name.
///
/// ```
/// # use idem_core::{Call, Fingerprint, Idempotency};
/// # use idem_conformance::ReferenceStore;
/// # async fn provider_charge(_amount: u64, _idempotency_key: &str) -> Result<String, idem_core::Error> { Ok("ch_1".into()) }
/// # async fn demo() -> Result<(), idem_core::Error> {
/// # let idem = Idempotency::new(ReferenceStore::new());
/// let key = idem.key("shop.checkout").part("order-42").finish()?;
/// let call = Call::new(key, Fingerprint::of(&("order-42", 1_000))?);
/// idem.run(call, async {
///     let key = idem_core::downstream_key("charge").expect("inside an idempotent body");
///     // Every attempt of this call charges with the same key: the provider charges once.
///     provider_charge(1_000, key.as_str()).await
/// })
/// .await?;
/// assert_eq!(idem_core::downstream_key("charge"), None, "outside a call there is none");
/// # Ok(()) }
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(demo()).unwrap();
/// ```
pub fn downstream_key(operation: &str) -> Option<DownstreamKey> {
    context().map(|call| call.downstream_key(operation))
}

/// The key of the next downstream request of the [step](crate::step) running on this task:
/// derived from the call, the step's name and how many keys the step took before this one
/// (1 for the first). `None` outside a step (or outside an idempotent call).
///
/// A step is the unit of an effect: with one provider call per step, the step's name names the
/// operation, and the body needs no name of its own. idem-client sends it by itself.
///
/// ```
/// # use idem_core::{Call, Fingerprint, Idempotency};
/// # use idem_conformance::ReferenceStore;
/// # async fn provider_charge(_amount: u64, _idempotency_key: &str) -> Result<String, idem_core::Error> { Ok("ch_1".into()) }
/// # async fn demo() -> Result<(), idem_core::Error> {
/// # let idem = Idempotency::new(ReferenceStore::new());
/// # let key = idem.key("shop.checkout").part("order-42").finish()?;
/// # let call = Call::new(key, Fingerprint::of(&("order-42", 1_000))?);
/// idem.run(call, async {
///     idem_core::step("charge", async {
///         let key = idem_core::step_downstream_key().expect("inside a step");
///         provider_charge(1_000, key.as_str()).await
///     })
///     .await
/// })
/// .await?;
/// # Ok(()) }
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(demo()).unwrap();
/// ```
///
/// The number is stable because a step runs its future afresh in every attempt, counting from
/// 1, and a deterministic future asks for keys in the same order each time. A step whose
/// future asks for keys in an order that depends on timing (requests raced with `select!`)
/// should name its operations instead ([`downstream_key`]).
pub fn step_downstream_key() -> Option<DownstreamKey> {
    let call = context()?;
    STEP.try_with(|step| call.derive(Some(&step.name), "", step.ordinals.next("")))
        .ok()
}

/// The key of the next use of `operation` in the idempotent call running on this task (in the
/// [step](crate::step) running, inside one), or `None` outside a call: the n-th call with one
/// name gives the n-th key, so that two identical requests in one body are two operations,
/// each with a key of its own, the same in every attempt.
///
/// Uses are counted per attempt of the call and, inside a step, per run of the step: a takeover
/// replays finished steps without running them, and counts from 1 again in the rest. A body
/// that sends the same request again after a failure (a retry loop of its own) takes the next
/// key, a new operation to the provider; retry inside the step instead, or name the request
/// with [`downstream_key`], which gives the same key every time.
pub fn next_downstream_key(operation: &str) -> Option<DownstreamKey> {
    context().map(|call| call.next_downstream_key(operation))
}

impl CallContext {
    /// The key to send to a downstream service for `operation` of this call: see
    /// [`downstream_key`](crate::downstream_key).
    pub fn downstream_key(&self, operation: &str) -> DownstreamKey {
        derive(self, &[b"named", operation.as_bytes()])
    }

    /// The key of the next use of `operation` in this call, or in the step running on this
    /// task: see [`next_downstream_key`](crate::next_downstream_key).
    pub fn next_downstream_key(&self, operation: &str) -> DownstreamKey {
        match STEP.try_with(|step| (step.name.clone(), step.ordinals.next(operation))) {
            Ok((name, ordinal)) => self.derive(Some(&name), operation, ordinal),
            Err(_) => {
                let ordinal = self.downstream_ordinals().next(operation);
                self.derive(None, operation, ordinal)
            }
        }
    }

    /// The key of the `ordinal`-th use of `operation` in step `step`, or outside steps.
    fn derive(&self, step: Option<&str>, operation: &str, ordinal: u32) -> DownstreamKey {
        let ordinal = ordinal.to_be_bytes();
        match step {
            Some(step) => derive(
                self,
                &[b"in-step", step.as_bytes(), operation.as_bytes(), &ordinal],
            ),
            None => derive(self, &[b"in-call", operation.as_bytes(), &ordinal]),
        }
    }
}

/// The key of `parts` in `call`: each part after its length, so that no two lists of parts
/// spell the same input, after the call's stored key and fingerprint. The fingerprint is in it
/// because a key released (after an `Err`, a 5xx) may be used again with other arguments:
/// that is another call, whose effects the provider must not take for the first one's.
fn derive(call: &CallContext, parts: &[&[u8]]) -> DownstreamKey {
    let stored_key = call.stored_key();
    let fingerprint = call.fingerprint().to_string();
    let mut input = DOMAIN.to_vec();
    let call_parts = [stored_key.as_str().as_bytes(), fingerprint.as_bytes()];
    for part in call_parts.into_iter().chain(parts.iter().copied()) {
        input.extend_from_slice(&(part.len() as u64).to_be_bytes());
        input.extend_from_slice(part);
    }
    let digest = keyed_digest(call, &input);
    let mut key = String::with_capacity(DOWNSTREAM_KEY_PREFIX.len() + 52);
    key.push_str(DOWNSTREAM_KEY_PREFIX);
    base32_into(&mut key, &digest);
    DownstreamKey(key)
}

/// HMAC-SHA256 of `input` under the handle's key digest secret, or its SHA-256 without one.
fn keyed_digest(call: &CallContext, input: &[u8]) -> [u8; 32] {
    #[cfg(feature = "seal")]
    if let Some(digest) = &call.stored_form().sealing.digest {
        return digest.mac_of(input);
    }
    let _ = call;
    Sha256::digest(input).into()
}

/// `bytes` in base32 (RFC 4648's alphabet, lowercase, no padding).
fn base32_into(out: &mut String, bytes: &[u8]) {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &byte in bytes {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
}

/// How many times each operation took a key so far: in one attempt of a call, or one run of a
/// step.
#[derive(Debug, Default)]
pub(crate) struct Ordinals(Mutex<HashMap<String, u32>>);

impl Ordinals {
    /// The ordinal of this use of `operation`: 1 for the first.
    fn next(&self, operation: &str) -> u32 {
        // Nothing panics while holding the lock, so a poisoned map is still consistent.
        let mut counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let count = counts.entry(operation.to_owned()).or_insert(0);
        *count = count.saturating_add(1);
        *count
    }
}

/// The step whose future runs on this task, for its downstream keys.
struct StepFrame {
    name: String,
    ordinals: Ordinals,
}

tokio::task_local! {
    static STEP: StepFrame;
}

/// Runs `future` as step `name`'s, for [`step_downstream_key`] and [`next_downstream_key`].
pub(crate) fn in_step<F: Future>(name: &str, future: F) -> impl Future<Output = F::Output> {
    STEP.scope(
        StepFrame {
            name: name.to_owned(),
            ordinals: Ordinals::default(),
        },
        future,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_is_rfc_4648_lowercase_without_padding() {
        let encode = |bytes: &[u8]| {
            let mut out = String::new();
            base32_into(&mut out, bytes);
            out
        };
        assert_eq!(encode(b""), "");
        assert_eq!(encode(b"f"), "my");
        assert_eq!(encode(b"fo"), "mzxq");
        assert_eq!(encode(b"foobar"), "mzxw6ytboi");
        assert_eq!(encode(&[0xff; 32]).len(), 52);
    }

    #[test]
    fn ordinals_count_each_operation_apart() {
        let ordinals = Ordinals::default();
        assert_eq!(ordinals.next("charge"), 1);
        assert_eq!(ordinals.next("charge"), 2);
        assert_eq!(ordinals.next("refund"), 1);
    }
}
