//! A call in two halves on the handle: [`Idempotency::begin`], which never waits, and
//! [`Idempotency::run_pending`], which reserves and runs the body.

use std::future::Future;

use crate::call::begun::{Begun, PendingCall};
use crate::call::codec::OutcomeCodec;
use crate::call::policy::ErrorPolicy;
use crate::call::{Answered, Call};
use crate::error::Error;
use crate::handle::Idempotency;

impl Idempotency {
    /// The first half of [`run_with_codec`](Idempotency::run_with_codec), which never waits:
    /// [`Begun::Answered`] when `call`'s completed record is found before anything is
    /// claimed (in the replay cache, or by the store's in-process lookup: the memory store
    /// answers there, a network store never does) or the call fails that early;
    /// [`Begun::Pending`] otherwise, to run with [`run_pending`](Idempotency::run_pending) and
    /// the same `policy` and `codec`.
    ///
    /// For a caller whose body is costly to build (a front end that prepares a handler's
    /// future, a channel, a task): on a replay, none of it is built. The two halves are one
    /// call, counted and traced once.
    ///
    /// ```
    /// use idem_core::{Begun, Call, Fingerprint, Idempotency, JsonCodec, ReleaseErrors};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), idem_core::Error> {
    /// let idem = Idempotency::new(idem_conformance::ReferenceStore::new());
    /// let key = idem.key("receipts.render").part("order-42").finish()?;
    /// for attempt in 0..2 {
    ///     let call = Call::new(key.clone(), Fingerprint::of(&"order-42")?);
    ///     let answered = match idem.begin(call, &ReleaseErrors, &JsonCodec) {
    ///         Begun::Answered(answered) => answered?,
    ///         // Built only when the body may run.
    ///         Begun::Pending(pending) => {
    ///             let body = async { Ok::<_, idem_core::Error>("receipt 42".to_owned()) };
    ///             idem.run_pending(pending, &ReleaseErrors, &JsonCodec, body).await?
    ///         }
    ///     };
    ///     assert_eq!(answered.value, "receipt 42");
    ///     assert_eq!(answered.replayed, attempt > 0);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn begin<T, E, P, C>(&self, call: Call, policy: &P, codec: &C) -> Begun<T, E>
    where
        E: From<Error>,
        P: ErrorPolicy<E>,
        C: OutcomeCodec<T>,
    {
        self.engine.begin(call, policy, codec)
    }

    /// The second half of [`run_with_codec`](Idempotency::run_with_codec): reserves the key of
    /// `pending` (or finds the record a lookup could not) and runs `body` under `policy`, its
    /// value stored through `codec`, as [`begin`](Idempotency::begin) was given them. The
    /// clock is read again, however long ago the call began.
    ///
    /// Only the handle whose `begin` made `pending` (or a clone of it) runs it: another would
    /// store its fingerprint in the first handle's form. Any other fails with
    /// [`Error::Unsupported`] and runs nothing.
    pub async fn run_pending<T, E, P, C, F>(
        &self,
        pending: PendingCall,
        policy: &P,
        codec: &C,
        body: F,
    ) -> Result<Answered<T>, E>
    where
        E: From<Error>,
        P: ErrorPolicy<E>,
        C: OutcomeCodec<T>,
        F: Future<Output = Result<T, E>>,
    {
        self.engine.run_pending(pending, policy, codec, body).await
    }
}
