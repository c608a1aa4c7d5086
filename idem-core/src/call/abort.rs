//! What happens to a reservation when its call is aborted after the body started.

/// What a panic or a dropped future does to the key once the body has been polled.
///
/// A body that was polled may have done its side effect (sent the charge) without its outcome
/// being recorded. The commonest case is a web handler whose client disconnects: the server
/// drops the handler's future mid-flight. Releasing the key then lets the client's retry charge
/// again, so the default holds it.
///
/// A call aborted before its body was first polled always releases: nothing ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OnAbort {
    /// The reservation stays and its renewal stops: the key answers
    /// [`Error::InProgress`](crate::Error::InProgress) until the lease passes, then a retry with
    /// the same arguments takes it over, exactly as after a crash. The default.
    #[default]
    Hold,
    /// The key is released at once, so a retry runs the body again. Right for bodies whose
    /// effects roll back when dropped, such as a database transaction.
    Release,
    /// A final outcome is recorded: every retry until the TTL passes gets
    /// [`Error::Aborted`](crate::Error::Aborted) (HTTP 500, not retryable), so the body never
    /// runs twice even when the first run's effect is unknown ("the first result stands").
    Fail,
}
