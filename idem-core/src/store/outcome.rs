//! A completed call's stored outcome: its serialised value as shared bytes, which every
//! replay of the record borrows instead of copying.

use bytes::Bytes;

/// A stored return value.
///
/// The value is [`Bytes`]: shared, reference-counted bytes. A store hands over the buffer it
/// read the record into (or, in memory, the one it keeps), and a clone of the outcome, as
/// every replay and the replay cache make, shares it rather than copying it.
///
/// ```
/// use idem_core::store::Outcome;
/// let outcome = Outcome::ok(br#"{"id":42}"#.to_vec());
/// let replayed = outcome.clone();
/// assert_eq!(replayed.body(), br#"{"id":42}"#);
/// // The clone lends the same bytes.
/// assert_eq!(replayed.bytes().unwrap().as_ptr(), outcome.bytes().unwrap().as_ptr());
/// assert!(Outcome::Aborted.bytes().is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The serialised `Ok` value: JSON, unless the call ran with an
    /// [`OutcomeCodec`](crate::OutcomeCodec) of its own.
    Ok(Bytes),
    /// The serialised `Err` value (JSON), stored by a `store_err` policy.
    Err(Bytes),
    /// The call was aborted (panic or dropped future) after its body started, under
    /// [`OnAbort::Fail`](crate::OnAbort::Fail): replayed as
    /// [`Error::Aborted`](crate::Error::Aborted). Has no body.
    Aborted,
}

impl Outcome {
    /// The outcome of a call that returned `Ok`, serialised as `body`. A `Vec<u8>` or a
    /// [`Bytes`] becomes the outcome's bytes without a copy.
    pub fn ok(body: impl Into<Bytes>) -> Self {
        Outcome::Ok(body.into())
    }

    /// The outcome of a call that returned an `Err` its policy stores, serialised as `body`.
    /// A `Vec<u8>` or a [`Bytes`] becomes the outcome's bytes without a copy.
    pub fn err(body: impl Into<Bytes>) -> Self {
        Outcome::Err(body.into())
    }

    /// The serialised value; empty for [`Outcome::Aborted`].
    pub fn body(&self) -> &[u8] {
        self.bytes().map_or(&[], |body| body)
    }

    /// The serialised value as the shared bytes the outcome holds, for a caller that keeps
    /// it (a clone of them is a reference, not a copy); `None` for [`Outcome::Aborted`].
    pub fn bytes(&self) -> Option<&Bytes> {
        match self {
            Outcome::Ok(body) | Outcome::Err(body) => Some(body),
            Outcome::Aborted => None,
        }
    }

    /// Whether the function returned `Ok`.
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_constructors_take_the_buffer_they_are_given() {
        let body = b"\"ch_1\"".to_vec();
        let at = body.as_ptr();
        let ok = Outcome::ok(body);
        assert!(ok.is_ok());
        assert_eq!(ok.body(), b"\"ch_1\"");
        assert_eq!(
            ok.bytes().map(|body| body.as_ptr()),
            Some(at),
            "the Vec moved in"
        );

        let shared = Bytes::from_static(b"\"declined\"");
        let err = Outcome::err(shared.clone());
        assert!(!err.is_ok());
        assert_eq!(err.bytes(), Some(&shared));
        assert_eq!(err.body().as_ptr(), shared.as_ptr());
    }

    #[test]
    fn an_aborted_outcome_has_no_bytes() {
        assert_eq!(Outcome::Aborted.body(), b"");
        assert_eq!(Outcome::Aborted.bytes(), None);
        assert!(!Outcome::Aborted.is_ok());
    }

    #[test]
    fn a_clone_shares_the_bytes() {
        let outcome = Outcome::ok(vec![b'1'; 1 << 10]);
        let clone = outcome.clone();
        assert_eq!(clone, outcome);
        assert_eq!(clone.body().as_ptr(), outcome.body().as_ptr());
    }
}
