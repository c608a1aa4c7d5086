//! What the layer reads from a request: its key, its scope, its fingerprint and the digest of
//! its bytes, its body shared with the duplicates in flight, and the codings it accepts.

pub(crate) mod encoding;
pub(crate) mod fingerprint;
pub(crate) mod key_header;
pub(crate) mod raw_digest;
pub(crate) mod scope;
pub(crate) mod shared_bodies;
