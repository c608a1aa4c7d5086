//! [`IdempotentRetry`] and its builder: which requests get a key, and how long to keep trying.

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, Method};
use idem_protocol::problem::ProblemType;

pub use idem_protocol::header::IDEMPOTENCY_KEY;

/// Attempts per `send()`, the first one included: no count by default, so that the time
/// budget, [`DEFAULT_MAX_ELAPSED`], decides when to give up.
///
/// With the default backoff, at least 8 attempts fit in it when each fails at once (a lost
/// answer, a refused connection): the waits before them add up to 16.2 s at most (200 ms,
/// 400 ms, 0.8 s, 1.6 s, 3.2 s, then 5 s), and 10 or so on average. A send is lost only if
/// every attempt is: at a loss rate `p`, `p^8` at most, that is 1 in 256 at 50% lost answers,
/// 1 in 15,000 at 30%, 1 in 10^8 at 10%. A count of 5 lost 1 send in 32 at 50%.
pub const DEFAULT_MAX_ATTEMPTS: u32 = u32::MAX;
/// No attempt starts later than this after the first one: less than the lease of a server on
/// idem (30 s by default), past which a request that ran but whose answer was not recorded may
/// be run again. The default policy's only bound: see [`DEFAULT_MAX_ATTEMPTS`].
pub const DEFAULT_MAX_ELAPSED: Duration = Duration::from_secs(20);
/// The backoff before the first retry, doubled for each one after it.
pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_millis(200);
/// The longest backoff between two attempts.
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(5);
/// The longest a server's `Retry-After` is waited.
pub const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(10);
/// idem-http's problem type for a request that was handled but whose response was not
/// recorded (`idem_http::problem::NOT_RECORDED`), as 0.1 spells it; the middleware knows it
/// in every version.
pub const IDEM_HTTP_NOT_RECORDED: &str = ProblemType::NotRecorded.uri();

/// The middleware: keys the requests that change things, retries them with their key, and
/// returns the final answer. See the [crate docs](crate) for what is retried and why.
///
/// ```
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(idem_client::IdempotentRetry::default())
///     .build();
/// # drop(client);
/// ```
#[derive(Clone, Debug, Default)]
pub struct IdempotentRetry {
    pub(crate) config: Arc<Config>,
}

impl IdempotentRetry {
    /// The defaults, to change.
    pub fn builder() -> IdempotentRetryBuilder {
        IdempotentRetryBuilder {
            config: Config::default(),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) header: HeaderName,
    pub(crate) sf_string_keys: bool,
    pub(crate) keyed_methods: Vec<Method>,
    pub(crate) max_attempts: u32,
    pub(crate) max_elapsed: Duration,
    pub(crate) initial_backoff: Duration,
    pub(crate) max_backoff: Duration,
    pub(crate) max_retry_after: Duration,
    pub(crate) not_recorded_types: Vec<String>,
    pub(crate) hide_keys_in_logs: bool,
    pub(crate) downstream_keys: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            header: IDEMPOTENCY_KEY,
            sf_string_keys: false,
            keyed_methods: vec![Method::POST, Method::PATCH],
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            max_elapsed: DEFAULT_MAX_ELAPSED,
            initial_backoff: DEFAULT_INITIAL_BACKOFF,
            max_backoff: DEFAULT_MAX_BACKOFF,
            max_retry_after: DEFAULT_MAX_RETRY_AFTER,
            not_recorded_types: Vec::new(),
            hide_keys_in_logs: false,
            downstream_keys: true,
        }
    }
}

/// Builds an [`IdempotentRetry`]; every setting has a default.
///
/// ```
/// use std::time::Duration;
///
/// let retry = idem_client::IdempotentRetry::builder()
///     .max_attempts(8)
///     .max_elapsed(Duration::from_secs(25))
///     .not_recorded_problem_type("https://api.example.com/problems/outcome-unknown")
///     .build();
/// # drop(retry);
/// ```
#[derive(Clone, Debug)]
#[must_use = "call build() to get the middleware"]
pub struct IdempotentRetryBuilder {
    config: Config,
}

impl IdempotentRetryBuilder {
    /// The header that carries the key ([`IDEMPOTENCY_KEY`] by default).
    pub fn header(mut self, header: HeaderName) -> Self {
        self.config.header = header;
        self
    }

    /// Whether a minted key is sent as a Structured Field string (`"8e03978e-..."`, quotes
    /// included), as the IETF draft writes it, rather than bare (`8e03978e-...`), as Stripe's
    /// clients send it. Bare by default: idem-http and Stripe read both; a server that parses
    /// the header strictly as the draft says needs the quotes. A key you set is sent as you set
    /// it: quote it yourself for such a server ([`key_of`](crate::key_of) and
    /// [`SendError::key`](crate::SendError::key) give keys without their quotes).
    pub fn sf_string_keys(mut self, quoted: bool) -> Self {
        self.config.sf_string_keys = quoted;
        self
    }

    /// The methods whose requests get a fresh key when they have none (POST and PATCH by
    /// default). A request of another method is keyed, and retried, only when the caller set
    /// its key.
    pub fn keyed_methods(mut self, methods: impl IntoIterator<Item = Method>) -> Self {
        self.config.keyed_methods = methods.into_iter().collect();
        self
    }

    /// Attempts per `send()`, the first one included: a count on top of
    /// [`max_elapsed`](Self::max_elapsed), which alone bounds them by default
    /// ([`DEFAULT_MAX_ATTEMPTS`] is no count). 1 turns retries off and keeps the keys. Zero
    /// counts as one.
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.config.max_attempts = attempts.max(1);
        self
    }

    /// No retry starts later than this after the first attempt ([`DEFAULT_MAX_ELAPSED`]): a
    /// wait that would end past it is not begun, and the last answer is returned. An attempt
    /// in flight is never cut short; bound each one with reqwest's own timeouts
    /// (`reqwest::Client::new()` has none).
    ///
    /// Keep it under the server's lease (30 s on idem by default). A request that ran but
    /// whose answer was not recorded holds its key until the lease passes, and is answered
    /// 409 meanwhile; a retry after that may run it again.
    pub fn max_elapsed(mut self, max_elapsed: Duration) -> Self {
        self.config.max_elapsed = max_elapsed;
        self
    }

    /// The backoff: `initial` before the first retry, doubled for each one after it up to
    /// `max`, each wait drawn between half of that and all of it
    /// ([`DEFAULT_INITIAL_BACKOFF`], [`DEFAULT_MAX_BACKOFF`]).
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.config.initial_backoff = initial;
        self.config.max_backoff = max.max(initial);
        self
    }

    /// Leaves the key out of this crate's logs: for keys that say something of the operation
    /// (an order number, a customer's id), as idem-core's
    /// `Idempotency::name_keys_by_digest` does on the server. The key is still sent, and still in
    /// [`key_of`](crate::key_of) and [`SendError`](crate::SendError) for the caller.
    pub fn hide_keys_in_logs(mut self) -> Self {
        self.config.hide_keys_in_logs = true;
        self
    }

    /// Whether a request sent from inside an idempotent call (an `#[idempotent]` body, a
    /// handler behind idem-http's layer or idem-lambda) carries the call's downstream key of
    /// its operation (`true`, the default: see the [crate docs](crate#inside-an-idempotent-call))
    /// or a random one, as outside a call. With random keys, a call that a retry takes over
    /// after a crash sends its requests again under new keys, and their effects happen twice:
    /// turn it off only for a downstream service that must see every attempt as new.
    pub fn downstream_keys(mut self, derived: bool) -> Self {
        self.config.downstream_keys = derived;
        self
    }

    /// The longest a server's `Retry-After` is waited ([`DEFAULT_MAX_RETRY_AFTER`]): a longer
    /// one is waited this long before the retry.
    pub fn max_retry_after(mut self, max: Duration) -> Self {
        self.config.max_retry_after = max;
        self
    }

    /// Another `application/problem+json` type that says "handled, but the answer was not
    /// recorded": a 5xx of that type is returned to the caller, not retried. idem-http's
    /// ([`IDEM_HTTP_NOT_RECORDED`], in every version) is always known.
    pub fn not_recorded_problem_type(mut self, problem_type: impl Into<String>) -> Self {
        self.config.not_recorded_types.push(problem_type.into());
        self
    }

    /// The middleware.
    pub fn build(self) -> IdempotentRetry {
        IdempotentRetry {
            config: Arc::new(self.config),
        }
    }
}

impl Config {
    /// `key` as this crate's logs name it: not at all under
    /// [`hide_keys_in_logs`](IdempotentRetryBuilder::hide_keys_in_logs).
    pub(crate) fn logged_key<'a>(&self, key: &'a str) -> Option<&'a str> {
        (!self.hide_keys_in_logs).then_some(key)
    }
}
