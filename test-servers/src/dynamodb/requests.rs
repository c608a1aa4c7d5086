//! An interceptor that logs every HTTP request a client sends, so tests can count them.

use std::sync::{Arc, Mutex, MutexGuard};

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents, SharedInterceptor};
use aws_sdk_dynamodb::error::BoxError;

/// One request as it went on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The operation, from the `X-Amz-Target` header: `PutItem`, `GetItem`, ...
    pub operation: String,
    /// The JSON body.
    pub body: String,
}

/// Logs the requests of the client it is installed on: each attempt that is transmitted,
/// retries included. Cheap to clone; clones share the log.
#[derive(Clone, Debug, Default)]
pub struct RequestLog {
    requests: Arc<Mutex<Vec<Request>>>,
}

impl RequestLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// The interceptor to install on a client.
    pub fn interceptor(&self) -> SharedInterceptor {
        SharedInterceptor::new(self.clone())
    }

    /// How many requests were sent so far.
    pub fn count(&self) -> usize {
        self.lock().len()
    }

    /// The requests sent so far.
    pub fn requests(&self) -> Vec<Request> {
        self.lock().clone()
    }

    /// The operations of the requests sent since the log held `since` requests.
    pub fn operations_since(&self, since: usize) -> Vec<String> {
        self.lock()[since..]
            .iter()
            .map(|request| request.operation.clone())
            .collect()
    }

    /// The requests sent since the log held `since` requests.
    pub fn since(&self, since: usize) -> Vec<Request> {
        self.lock()[since..].to_vec()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Request>> {
        self.requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Intercept for RequestLog {
    fn name(&self) -> &'static str {
        "RequestLog"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request();
        let operation = request
            .headers()
            .get("x-amz-target")
            .and_then(|target| target.rsplit('.').next())
            .unwrap_or("?")
            .to_owned();
        let body = request
            .body()
            .bytes()
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
            .unwrap_or_default();
        self.lock().push(Request { operation, body });
        Ok(())
    }
}
