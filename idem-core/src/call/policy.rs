//! Which `Err` values are stored and replayed instead of releasing the key.

use serde::{de::DeserializeOwned, Serialize};

use crate::{error::Error, error::Message};

/// Decides what happens to an `Err` returned by the function.
///
/// Releasing (the default, [`ReleaseErrors`]) lets the same key be retried: right for errors
/// that happen before any side effect. Storing ([`StoreErrorsWhen`]) replays the error to every
/// retry: right for errors after an irreversible side effect, where a retry would do it twice.
pub trait ErrorPolicy<E> {
    /// `Some(bytes)` to store this error, `None` to release the key.
    fn encode(&self, error: &E) -> Option<Result<Vec<u8>, Error>>;
    /// Rebuilds a stored error.
    fn decode(&self, body: &[u8]) -> Result<E, Error>;

    /// `true` to hold the key until its lease passes, as after a panic, for an error that is
    /// not stored: one that may come after a side effect whose fate the body does not know (a
    /// timeout that cut the body off halfway). A retry is told the call is in progress until
    /// then, and takes the key over after, as after a crash. `false` (the default) releases.
    fn holds(&self, error: &E) -> bool {
        let _ = error;
        false
    }
}

/// Releases the key on every `Err`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReleaseErrors;

impl<E> ErrorPolicy<E> for ReleaseErrors {
    fn encode(&self, _: &E) -> Option<Result<Vec<u8>, Error>> {
        None
    }

    fn decode(&self, _: &[u8]) -> Result<E, Error> {
        Err(Error::codec(Message(
            "the record holds a stored error but this function has no `store_err` policy".into(),
        )))
    }
}

/// Stores the errors for which the predicate returns `true`; releases the key for the rest.
#[derive(Clone, Copy, Debug)]
pub struct StoreErrorsWhen<P>(pub P);

impl<E, P> ErrorPolicy<E> for StoreErrorsWhen<P>
where
    E: Serialize + DeserializeOwned,
    P: Fn(&E) -> bool,
{
    fn encode(&self, error: &E) -> Option<Result<Vec<u8>, Error>> {
        (self.0)(error).then(|| serde_json::to_vec(error).map_err(Error::codec))
    }

    fn decode(&self, body: &[u8]) -> Result<E, Error> {
        serde_json::from_slice(body).map_err(Error::codec)
    }
}
