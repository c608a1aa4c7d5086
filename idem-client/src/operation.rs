//! Which operation of an idempotent call a request performs: what its downstream key is
//! derived from.

use std::fmt;
use std::sync::Arc;

/// The name of the operation a request performs within the idempotent call it is sent from:
/// set it on the request ([`operation`]), and a request sent from inside the call carries the
/// call's downstream key of that name
/// ([`CallContext::downstream_key`](idem_core::CallContext::downstream_key)), the same in every
/// attempt of the call.
///
/// Without one, a request sent from inside the call takes the next key of its method and URL
/// path ([`next_downstream_key`](idem_core::next_downstream_key), say
/// `POST /v1/charges/ord_42`, numbered when the call sends it again), under the name of the
/// [step](idem_core::step) that sends it, when one does. See the
/// [crate docs](crate#inside-an-idempotent-call).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Operation(Arc<str>);

impl Operation {
    /// The operation's name.
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Operation").field(&&*self.0).finish()
    }
}

/// The operation `name`, to set on a request with reqwest-middleware's
/// `RequestBuilder::with_extension`: one name gives one key within a call, so a deliberate
/// second effect of the same kind takes another name.
///
/// ```no_run
/// # async fn run(client: reqwest_middleware::ClientWithMiddleware) -> Result<(), reqwest_middleware::Error> {
/// // Inside an idempotent body: both charges happen once each, whatever retries and takeovers.
/// client
///     .post("https://payments.example.com/v1/charges")
///     .with_extension(idem_client::operation("charge-deposit"))
///     .send()
///     .await?;
/// client
///     .post("https://payments.example.com/v1/charges")
///     .with_extension(idem_client::operation("charge-balance"))
///     .send()
///     .await?;
/// # Ok(()) }
/// ```
pub fn operation(name: impl Into<String>) -> Operation {
    Operation(name.into().into())
}
