//! `Keyring`: the AES-256-GCM keys values are sealed with and opened by.

use std::fmt;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use bytes::Bytes;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The length of a sealing key, in bytes.
pub const SEAL_KEY_BYTES: usize = 32;

use crate::store::{SEALED_MAGIC, SEALED_PREFIX as MAGIC};
const NONCE_BYTES: usize = 12;
/// The longest key id a ring holds.
pub(crate) const MAX_KEY_ID_BYTES: usize = 64;
/// AES-GCM's authentication tag.
const TAG_BYTES: usize = 16;
/// The most a sealed value is longer than the value sealed: the magic, the key id and its
/// length, the nonce and the tag. A longer stored value does not open, whatever it holds.
pub(crate) const MAX_SEAL_OVERHEAD: usize =
    MAGIC.len() + 1 + MAX_KEY_ID_BYTES + NONCE_BYTES + TAG_BYTES;

/// The keys values are sealed with: the current one seals everything new, and every key in
/// the ring opens what it sealed, so that keys can be rotated while records sealed with the
/// previous one are still replayed.
///
/// ```
/// use idem_core::seal::Keyring;
/// # let (current_key, previous_key) = ([7u8; 32], [9u8; 32]);
/// // Each key is 32 random bytes: `openssl rand -base64 32`, decoded.
/// let keys = Keyring::new("2026-11", current_key).with_old("2026-05", previous_key);
/// ```
#[derive(Clone)]
pub struct Keyring {
    current: Named,
    old: Vec<Named>,
    accept_unsealed: bool,
}

#[derive(Clone)]
struct Named {
    id: String,
    cipher: Aes256Gcm,
    /// Derives each value's nonce from the value and its context.
    nonces: Hmac<Sha256>,
}

impl Named {
    fn new(id: &str, key: &[u8; SEAL_KEY_BYTES]) -> Self {
        assert!(
            !id.is_empty()
                && id.len() <= MAX_KEY_ID_BYTES
                && id.bytes().all(|b| b.is_ascii_graphic()),
            "a sealing key id is 1 to 64 visible ASCII characters, not {id:?}"
        );
        // The key given is never used as it is: the cipher's key and the nonces' key are
        // derived from it, each for its own use.
        let derive = |label: &[u8]| {
            let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key");
            mac.update(label);
            mac.finalize().into_bytes()
        };
        let cipher_key = derive(b"idem-seal-v1 cipher key");
        let nonce_key = derive(b"idem-seal-v1 nonce key");
        Named {
            id: id.to_owned(),
            cipher: Aes256Gcm::new_from_slice(&cipher_key).expect("32 bytes"),
            nonces: <Hmac<Sha256> as Mac>::new_from_slice(&nonce_key).expect("HMAC takes any key"),
        }
    }

    /// The nonce of `plain` in `context`: an HMAC of both under a key derived from the
    /// sealing key (a synthetic nonce, as SIV modes make). Two different values, or one value
    /// in two contexts, get different nonces; the same value sealed again in the same context
    /// gets the same bytes, so that a store can recognise a repeated completion.
    fn nonce(&self, plain: &[u8], context: &[u8]) -> [u8; NONCE_BYTES] {
        let mut mac = self.nonces.clone();
        mac.update(&(context.len() as u64).to_be_bytes());
        mac.update(context);
        mac.update(plain);
        let digest = mac.finalize().into_bytes();
        let mut nonce = [0; NONCE_BYTES];
        nonce.copy_from_slice(&digest[..NONCE_BYTES]);
        nonce
    }
}

/// Why a stored value did not open with a [`Keyring`]: what
/// [`Keyring::open_outcome`] answers when it can't, and what the corrupt record's reason says.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unopened {
    /// Sealed with a key the ring lacks.
    UnknownKey(String),
    /// Sealed with a key of the ring, but it does not open: changed, cut, or moved from
    /// another key or step.
    Tampered(String),
    /// Not sealed at all, and the ring refuses such values.
    Unsealed,
    /// Starts like a sealed value but is too short or malformed to be one.
    Malformed,
    /// Sealed in another format than this version's (the version byte): version 1, bound to
    /// the stored key alone and not to the store's prefix or table, is no longer opened.
    OtherFormat(u8),
}

impl fmt::Display for Unopened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unopened::UnknownKey(id) => write!(
                f,
                "sealed with key `{id}`, which the keyring lacks: add it with `with_old`"
            ),
            Unopened::Tampered(id) => write!(
                f,
                "sealed with key `{id}` but does not open: it was changed, or moved from another key"
            ),
            Unopened::Unsealed => f.write_str(
                "not sealed: values stored before sealing are read only under `accept_unsealed`",
            ),
            Unopened::Malformed => f.write_str("a malformed sealed value"),
            Unopened::OtherFormat(version) => write!(
                f,
                "sealed by another format (version {version}; this version opens {}): records \
                 sealed by an older one are not opened, since they are not bound to the \
                 store's prefix or table; let them expire, or delete them (`idem forget`) so \
                 that the next call seals again",
                MAGIC[3]
            ),
        }
    }
}

impl std::error::Error for Unopened {}

impl Keyring {
    /// A ring whose key `id` (1 to 64 visible ASCII characters, stored beside each value)
    /// seals everything new. `key` is 32 random bytes; panics on an id out of bounds.
    pub fn new(id: &str, key: [u8; SEAL_KEY_BYTES]) -> Self {
        Keyring {
            current: Named::new(id, &key),
            old: Vec::new(),
            accept_unsealed: false,
        }
    }

    /// The same ring, also opening what the key `id` sealed. Panics on an id out of bounds,
    /// or one already in the ring.
    pub fn with_old(mut self, id: &str, key: [u8; SEAL_KEY_BYTES]) -> Self {
        let taken = std::iter::once(&self.current)
            .chain(&self.old)
            .any(|named| named.id == id);
        assert!(!taken, "the sealing key id `{id}` is in the ring already");
        self.old.push(Named::new(id, &key));
        self
    }

    /// Reads values stored unsealed as they are, instead of refusing them as corrupt: while
    /// records written before sealing was turned on still live. Remove it once they have
    /// expired: until then, anyone with write access to the store can slip in an unsealed
    /// value, and it is replayed.
    pub fn accept_unsealed(mut self) -> Self {
        self.accept_unsealed = true;
        self
    }

    /// The id of the key new values are sealed with.
    pub fn current_id(&self) -> &str {
        &self.current.id
    }

    /// `plain` sealed under the current key, bound to `context`.
    pub(crate) fn seal(&self, plain: &[u8], context: &[u8]) -> Vec<u8> {
        let nonce = self.current.nonce(plain, context);
        let nonce = Nonce::from_slice(&nonce);
        let sealed = self
            .current
            .cipher
            .encrypt(
                nonce,
                Payload {
                    msg: plain,
                    aad: context,
                },
            )
            .expect("AES-GCM seals any value shorter than 64 GiB");
        let id = self.current.id.as_bytes();
        let mut out = Vec::with_capacity(MAGIC.len() + 1 + id.len() + NONCE_BYTES + sealed.len());
        out.extend_from_slice(&MAGIC);
        out.push(id.len() as u8);
        out.extend_from_slice(id);
        out.extend_from_slice(nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// `stored` opened, if sealed, with the key it names and `context`; as it is if it was
    /// stored unsealed and the ring still reads those.
    pub(crate) fn open(&self, stored: &[u8], context: &[u8]) -> Result<Vec<u8>, Unopened> {
        let Some(rest) = stored.strip_prefix(&MAGIC) else {
            return match stored.strip_prefix(&SEALED_MAGIC) {
                Some([version, ..]) => Err(Unopened::OtherFormat(*version)),
                _ if self.accept_unsealed => Ok(stored.to_vec()),
                _ => Err(Unopened::Unsealed),
            };
        };
        let (id, nonce, sealed) = sealed_parts(rest)?;
        let named = std::iter::once(&self.current)
            .chain(&self.old)
            .find(|named| named.id == id)
            .ok_or_else(|| Unopened::UnknownKey(id.to_owned()))?;
        named
            .cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: context,
                },
            )
            .map_err(|_| Unopened::Tampered(id.to_owned()))
    }

    /// [`open`](Keyring::open) for a value held as shared bytes: one stored unsealed, which
    /// the ring still reads, comes back as the same bytes rather than a copy.
    pub(crate) fn open_shared(&self, stored: &Bytes, context: &[u8]) -> Result<Bytes, Unopened> {
        if self.accept_unsealed && !is_sealed(stored) {
            return Ok(stored.clone());
        }
        self.open(stored, context).map(Bytes::from)
    }
}

/// A sealed value after its magic, in parts: the id of the key it names, the nonce, and the
/// ciphertext with its tag.
fn sealed_parts(rest: &[u8]) -> Result<(&str, &[u8], &[u8]), Unopened> {
    let (&id_len, rest) = rest.split_first().ok_or(Unopened::Malformed)?;
    let id_len = usize::from(id_len);
    if rest.len() < id_len + NONCE_BYTES {
        return Err(Unopened::Malformed);
    }
    let (id, rest) = rest.split_at(id_len);
    let (nonce, sealed) = rest.split_at(NONCE_BYTES);
    // Checked as the ring's own ids are: the id ends up in errors and logs.
    let id = std::str::from_utf8(id)
        .ok()
        .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or(Unopened::Malformed)?;
    Ok((id, nonce, sealed))
}

/// Whether `value` (a stored outcome or step value) is sealed: it starts as only sealed values
/// do (no JSON value starts with a zero byte, and the engine refuses to store a codec's value
/// that starts so), whether or not it would open.
///
/// ```
/// use idem_core::seal::is_sealed;
/// assert!(!is_sealed(br#"{"id":42}"#));
/// ```
pub fn is_sealed(value: &[u8]) -> bool {
    crate::store::is_sealed(value)
}

/// The id of the key `value` was sealed with, as stored beside it; `None` when `value` is
/// not sealed, or too malformed to name one. Nothing is opened: the id says which key of a
/// ring opens it, not that it does.
///
/// ```
/// use idem_core::seal::sealed_key_id;
/// assert_eq!(sealed_key_id(br#"{"id":42}"#), None);
/// ```
pub fn sealed_key_id(value: &[u8]) -> Option<&str> {
    // Every version so far lays out its key id the same way after the version byte.
    let (_version, rest) = value.strip_prefix(&SEALED_MAGIC)?.split_first()?;
    sealed_parts(rest).ok().map(|(id, _, _)| id)
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let old: Vec<&str> = self.old.iter().map(|named| named.id.as_str()).collect();
        f.debug_struct("Keyring")
            .field("current", &self.current.id)
            .field("old", &old)
            .field("accept_unsealed", &self.accept_unsealed)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nonce of a value sealed under key id `k1`.
    fn nonce(sealed: &[u8]) -> &[u8] {
        let start = MAGIC.len() + 1 + "k1".len();
        &sealed[start..start + NONCE_BYTES]
    }

    #[test]
    fn a_keyring_debugs_as_its_ids_and_never_its_keys() {
        let ring = Keyring::new("k2", [0xAB; 32]).with_old("k1", [0xCD; 32]);
        let shown = format!("{ring:?}");
        assert_eq!(
            shown,
            r#"Keyring { current: "k2", old: ["k1"], accept_unsealed: false }"#
        );
        assert!(!shown.contains("171") && !shown.contains("ab"), "{shown}");
    }

    #[test]
    fn the_overhead_bound_is_what_the_longest_key_id_adds() {
        let longest = "k".repeat(MAX_KEY_ID_BYTES);
        let ring = Keyring::new(&longest, [1; 32]);
        for plain in [&b""[..], b"card 4242", &[7; 1000]] {
            let sealed = ring.seal(plain, b"key-a");
            assert_eq!(sealed.len() - plain.len(), MAX_SEAL_OVERHEAD, "{plain:?}");
        }
        let short = Keyring::new("k1", [1; 32]).seal(b"card", b"key-a");
        assert_eq!(
            short.len() - b"card".len(),
            MAX_SEAL_OVERHEAD - (MAX_KEY_ID_BYTES - "k1".len())
        );
    }

    #[test]
    fn a_sealed_value_opens_in_its_context_only() {
        let ring = Keyring::new("k1", [1; 32]);
        let sealed = ring.seal(b"card 4242", b"key-a");
        assert!(!sealed.windows(4).any(|w| w == b"4242"));
        assert_eq!(ring.open(&sealed, b"key-a").unwrap(), b"card 4242");
        assert_eq!(
            ring.open(&sealed, b"key-b"),
            Err(Unopened::Tampered("k1".into()))
        );
        assert_eq!(
            ring.seal(b"card 4242", b"key-a"),
            sealed,
            "sealed again alike"
        );
        assert_ne!(nonce(&ring.seal(b"card 4243", b"key-a")), nonce(&sealed));
        assert_ne!(nonce(&ring.seal(b"card 4242", b"key-b")), nonce(&sealed));
    }

    #[test]
    fn old_keys_open_what_they_sealed_and_unknown_ones_are_named() {
        let old = Keyring::new("2026-05", [1; 32]);
        let sealed = old.seal(b"value", b"ctx");
        let rotated = Keyring::new("2026-11", [2; 32]).with_old("2026-05", [1; 32]);
        assert_eq!(rotated.open(&sealed, b"ctx").unwrap(), b"value");
        let without = Keyring::new("2026-11", [2; 32]);
        assert_eq!(
            without.open(&sealed, b"ctx"),
            Err(Unopened::UnknownKey("2026-05".into()))
        );
    }

    #[test]
    fn tampered_cut_and_unsealed_values_are_told_apart() {
        let ring = Keyring::new("k1", [1; 32]);
        let mut sealed = ring.seal(b"value", b"ctx");
        let last = sealed.len() - 1;
        sealed[last] ^= 1;
        assert_eq!(
            ring.open(&sealed, b"ctx"),
            Err(Unopened::Tampered("k1".into()))
        );
        assert_eq!(ring.open(&sealed[..8], b"ctx"), Err(Unopened::Malformed));
        assert_eq!(ring.open(b"{\"a\":1}", b"ctx"), Err(Unopened::Unsealed));
        let migrating = ring.accept_unsealed();
        assert_eq!(migrating.open(b"{\"a\":1}", b"ctx").unwrap(), b"{\"a\":1}");
    }

    #[test]
    fn the_key_given_is_not_the_cipher_s() {
        let key = [1; 32];
        let sealed = Keyring::new("k1", key).seal(b"value", b"ctx");
        let raw = Aes256Gcm::new_from_slice(&key).unwrap();
        let opened = raw.decrypt(
            Nonce::from_slice(nonce(&sealed)),
            Payload {
                msg: &sealed[MAGIC.len() + 3 + NONCE_BYTES..],
                aad: b"ctx",
            },
        );
        assert!(opened.is_err());
    }

    #[test]
    fn a_key_id_that_no_ring_could_hold_is_malformed() {
        let ring = Keyring::new("k1", [1; 32]);
        let mut forged = MAGIC.to_vec();
        forged.push(3);
        forged.extend_from_slice(b"k\n1");
        forged.extend_from_slice(&[0; NONCE_BYTES + 16]);
        assert_eq!(ring.open(&forged, b"ctx"), Err(Unopened::Malformed));
    }

    #[test]
    #[should_panic(expected = "in the ring already")]
    fn a_key_id_is_used_once() {
        let _ = Keyring::new("k1", [1; 32]).with_old("k1", [2; 32]);
    }

    #[test]
    fn a_value_cut_in_its_header_is_malformed_and_after_it_tampered() {
        let ring = Keyring::new("k1", [1; 32]);
        let sealed = ring.seal(b"value", b"ctx");
        let header = MAGIC.len() + 1 + "k1".len() + NONCE_BYTES;
        for cut in MAGIC.len()..sealed.len() {
            let expected = if cut < header {
                Unopened::Malformed
            } else {
                Unopened::Tampered("k1".into())
            };
            assert_eq!(
                ring.open(&sealed[..cut], b"ctx"),
                Err(expected),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn the_current_id_is_the_one_new_values_name() {
        let ring = Keyring::new("2026-11", [2; 32]).with_old("2026-05", [1; 32]);
        assert_eq!(ring.current_id(), "2026-11");
        let sealed = ring.seal(b"value", b"ctx");
        let id = &sealed[MAGIC.len() + 1..MAGIC.len() + 1 + "2026-11".len()];
        assert_eq!(id, ring.current_id().as_bytes());
    }
}
