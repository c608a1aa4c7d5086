//! What a call's arguments are known by: their fingerprint, or the digest of the request as it
//! was sent, with the fingerprint computed only when a comparison needs it; and the call the
//! engine works with once the fingerprint is known.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::{call::Call, error::Error, fingerprint::Fingerprint};

/// Computes a deferred call's fingerprint.
pub(crate) type Canonical = Arc<dyn Fn() -> Result<Fingerprint, Error> + Send + Sync>;

/// A call's arguments, as the caller gave them.
#[derive(Clone)]
pub(crate) enum Arguments {
    /// Fingerprinted already.
    Known(Fingerprint),
    /// Known by the digest of the request as sent; `canonical` fingerprints them when asked.
    Deferred {
        request: Fingerprint,
        canonical: Canonical,
    },
}

impl Arguments {
    /// The fingerprint, if known without computing it.
    pub(crate) fn fingerprint(&self) -> Option<&Fingerprint> {
        match self {
            Arguments::Known(fingerprint) => Some(fingerprint),
            Arguments::Deferred { .. } => None,
        }
    }

    /// The digest of the request as sent, for a deferred call.
    pub(crate) fn request_digest(&self) -> Option<&Fingerprint> {
        match self {
            Arguments::Known(_) => None,
            Arguments::Deferred { request, .. } => Some(request),
        }
    }

    /// The fingerprint: known, or computed now (each time this is asked: the engine asks once
    /// per call).
    pub(crate) fn canonical(&self) -> Result<Fingerprint, Error> {
        match self {
            Arguments::Known(fingerprint) => Ok(*fingerprint),
            Arguments::Deferred { canonical, .. } => canonical(),
        }
    }
}

impl fmt::Debug for Arguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arguments::Known(fingerprint) => f.debug_tuple("Known").field(fingerprint).finish(),
            Arguments::Deferred { request, .. } => f
                .debug_struct("Deferred")
                .field("request", request)
                .field("canonical", &format_args!("deferred"))
                .finish(),
        }
    }
}

/// A call whose fingerprint is known: what the engine works with from the quota's admission
/// on (claim, renewal, journal, settling, the body's context), so that no step past the
/// lookup can read a fingerprint that was never computed.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub(crate) call: Call,
    /// The arguments' fingerprint, as stored.
    pub(crate) fingerprint: Fingerprint,
    /// The digest of the request as sent, as stored, for a deferred call.
    pub(crate) request: Option<Fingerprint>,
}

impl Resolved {
    /// `call` with its fingerprint computed, if it was deferred.
    pub(crate) fn of(call: Call) -> Result<Resolved, Error> {
        let fingerprint = call.arguments.canonical()?;
        let request = call.arguments.request_digest().copied();
        Ok(Resolved {
            call,
            fingerprint,
            request,
        })
    }
}

impl Deref for Resolved {
    type Target = Call;

    fn deref(&self) -> &Call {
        &self.call
    }
}
