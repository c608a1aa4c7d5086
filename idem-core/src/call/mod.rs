//! One idempotent call's key, fingerprint and options.

pub(crate) mod abort;
pub(crate) mod arguments;
pub(crate) mod begun;
pub(crate) mod codec;
pub(crate) mod context;
pub(crate) mod downstream;
pub(crate) mod policy;
pub(crate) mod replay;
pub(crate) mod step;

use std::time::Duration;

use std::sync::Arc;

use crate::{
    call::abort::OnAbort, call::arguments::Arguments, error::Error, fingerprint::Fingerprint,
    key::Key,
};

/// How long a completed record is replayed unless told otherwise: 24 hours, as Stripe does.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How long a reservation holds without renewal unless told otherwise: 30 seconds. The lease is
/// renewed every third of it while the function runs, so it only runs out when the process
/// holding it died or hung; a retry after a crash waits at most this long.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// What to run under which key: the input of [`Idempotency::run`](crate::Idempotency::run).
///
/// ```
/// # use idem_core::{Call, Fingerprint, Idempotency};
/// # fn demo(idem: &Idempotency) -> Result<(), idem_core::Error> {
/// use std::time::Duration;
/// let key = idem.key("payments.charge").scope(Some("tenant-7")).part("order-42").finish()?;
/// let call = Call::new(key, Fingerprint::of(&("order-42", 1_000))?)
///     .with_ttl(Duration::from_secs(3600))
///     .with_wait(Duration::from_secs(5));
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Call {
    pub(crate) key: Key,
    pub(crate) arguments: Arguments,
    pub(crate) ttl: Duration,
    pub(crate) lease: Duration,
    pub(crate) wait: Option<Duration>,
    pub(crate) renew_every: Option<Duration>,
    pub(crate) renewed: bool,
    pub(crate) on_abort: OnAbort,
    pub(crate) max_outcome: Option<usize>,
    /// The scope of the key as the caller built it, once the key is shown by its digest.
    pub(crate) clear_scope: Option<String>,
}

impl Call {
    /// A call under `key` whose arguments fingerprint to `fingerprint`, with the default TTL and
    /// lease and no waiting.
    pub fn new(key: Key, fingerprint: Fingerprint) -> Self {
        Call::with_arguments(key, Arguments::Known(fingerprint))
    }

    /// A call under `key` made with the request whose digest is `request`, whose arguments'
    /// fingerprint `canonical` computes only when a comparison needs it.
    ///
    /// `request` is the digest of the request as it was sent, by the front end's own rule:
    /// one under which equal digests mean equal fingerprints (the same bytes, say), and that
    /// no other rule for calls under the same key shares (a domain tag of its own). A retry
    /// whose stored outcome carries an equal digest
    /// ([`OutcomeCodec::request_digest`](crate::OutcomeCodec::request_digest)) is replayed
    /// without computing the fingerprint; any other compares fingerprints, as a call made
    /// with [`Call::new`] does, and so does every call that claims its key, before anything
    /// is reserved. An error of `canonical` fails the call then, and nothing is reserved.
    ///
    /// ```
    /// # use idem_core::{Call, Fingerprint, Fingerprinter, Idempotency};
    /// # fn demo(idem: &Idempotency) -> Result<(), idem_core::Error> {
    /// use idem_core::json::CanonicalJson;
    /// let body = br#"{"amount":1000}"#;
    /// let request = Fingerprinter::new().add("my-raw-rule-v1")?.add(&body[..])?.finish();
    /// let key = idem.key("payments.charge").part("order-42").finish()?;
    /// // Computed only if a retry sends other bytes, or the key has no record yet.
    /// let call = Call::deferred(key, request, move || match CanonicalJson::parse(body) {
    ///     Some(json) => Fingerprint::of(&json),
    ///     None => Fingerprint::of(&body[..]),
    /// });
    /// assert_eq!(call.fingerprint(), None);
    /// assert_eq!(call.request_digest(), Some(&request));
    /// # Ok(()) }
    /// ```
    pub fn deferred(
        key: Key,
        request: Fingerprint,
        canonical: impl Fn() -> Result<Fingerprint, Error> + Send + Sync + 'static,
    ) -> Self {
        Call::with_arguments(
            key,
            Arguments::Deferred {
                request,
                canonical: Arc::new(canonical),
            },
        )
    }

    fn with_arguments(key: Key, arguments: Arguments) -> Self {
        Call {
            key,
            arguments,
            ttl: DEFAULT_TTL,
            lease: DEFAULT_LEASE,
            wait: None,
            renew_every: None,
            renewed: true,
            on_abort: OnAbort::Hold,
            max_outcome: None,
            clear_scope: None,
        }
    }

    /// How long the outcome is replayed, counted from completion. Zero is raised to 1 ms.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// How long the reservation holds without renewal. Raised to at least 3 ms so that it can
    /// be renewed every third.
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(3));
        self
    }

    /// Wait up to `wait` for an in-flight duplicate to finish and return its outcome, instead of
    /// failing at once with [`Error::InProgress`](crate::Error::InProgress).
    pub fn with_wait(mut self, wait: Duration) -> Self {
        self.wait = Some(wait);
        self
    }

    /// How often the lease is renewed while the call holds it; by default every third of the
    /// lease. Raised to at least 1 ms and capped at half the lease.
    ///
    /// Every store judges leases by the callers' clocks, so the interval sets how much clock
    /// skew between two processes is tolerated: a duplicate takes the key over only when its
    /// clock is ahead of the owner's by more than `lease - renew_every` (less the time a renewal
    /// takes to reach the store). With the defaults (30 s, renewed every 10 s) that is about
    /// 20 s.
    pub fn with_renew_every(mut self, interval: Duration) -> Self {
        self.renew_every = Some(interval);
        self
    }

    /// Holds the reservation for the lease as set and never renews it: for a body that cannot
    /// outlive a known deadline, such as a Lambda invocation, whose lease ends there. Once the
    /// lease passes, a retry with the same fingerprint takes the key over even if the body is
    /// still running, so set the lease no shorter than the body can take.
    pub fn without_renewal(mut self) -> Self {
        self.renewed = false;
        self
    }

    /// Whether the lease is renewed while the body runs: `true` unless
    /// [`without_renewal`](Call::without_renewal) was called.
    pub fn is_renewed(&self) -> bool {
        self.renewed
    }

    /// What a panic or a dropped future does to the key once the body has been polled
    /// ([`OnAbort::Hold`] unless told otherwise).
    pub fn with_on_abort(mut self, on_abort: OnAbort) -> Self {
        self.on_abort = on_abort;
        self
    }

    /// Refuses to replay a stored outcome longer than `bytes`, before it is decoded: the
    /// record is taken as corrupt ([`Error::CorruptRecord`](crate::Error::CorruptRecord)),
    /// so that a record written by someone else cannot make a replay decode (and allocate)
    /// without bound. No limit unless set; set it above the largest value the function returns,
    /// as encoded.
    pub fn with_max_outcome(mut self, bytes: usize) -> Self {
        self.max_outcome = Some(bytes);
        self
    }

    /// How often the lease is renewed: [`with_renew_every`](Call::with_renew_every)'s interval
    /// within its bounds, or a third of the lease.
    pub fn renew_every(&self) -> Duration {
        self.renew_every
            .unwrap_or(self.lease / 3)
            .clamp(Duration::from_millis(1), self.lease / 2)
    }

    /// The scope a quota counts the call in: the key's own, even once the key is shown by its
    /// digest.
    pub(crate) fn quota_scope(&self) -> Option<&str> {
        self.clear_scope.as_deref().or_else(|| self.key.scope())
    }

    /// The stored key.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// The arguments' fingerprint; `None` for a [deferred](Call::deferred) call, whose
    /// fingerprint is computed only as the call runs.
    pub fn fingerprint(&self) -> Option<&Fingerprint> {
        self.arguments.fingerprint()
    }

    /// The digest of the request as sent, for a [deferred](Call::deferred) call; `None` for
    /// one made with [`Call::new`].
    pub fn request_digest(&self) -> Option<&Fingerprint> {
        self.arguments.request_digest()
    }

    /// How long the outcome is replayed, counted from completion.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// How long the reservation holds without renewal.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// How long a duplicate waits for an in-flight call; `None` when it answers
    /// [`Error::InProgress`](crate::Error::InProgress) at once.
    pub fn wait(&self) -> Option<Duration> {
        self.wait
    }

    /// What a panic or a dropped future does to the key once the body has been polled.
    pub fn on_abort(&self) -> OnAbort {
        self.on_abort
    }

    /// The longest stored outcome replayed, if [`with_max_outcome`](Call::with_max_outcome)
    /// set one.
    pub fn max_outcome(&self) -> Option<usize> {
        self.max_outcome
    }
}

/// The result of a call that returned `Ok`: the value, and whether it was replayed from the
/// store rather than computed by this call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answered<T> {
    /// The function's value.
    pub value: T,
    /// `true` when the function did not run and the value came from an earlier call.
    pub replayed: bool,
}
