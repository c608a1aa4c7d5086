//! SDK clients for a test endpoint: plain HTTP, static credentials, `us-east-1`.

use std::time::Duration;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region, SharedInterceptor};
use aws_sdk_dynamodb::Client;

/// How a test client is built.
#[derive(Debug)]
pub struct ClientOptions {
    /// Whether the SDK retries failed requests (its standard strategy, with short backoffs).
    /// Off by default, so that every request a test counts is one the store made.
    pub retries: bool,
    /// How long connecting may take. Longer than the SDK's default, for a loaded test machine.
    pub connect_timeout: Duration,
    /// How long one operation may take, retries included (and each attempt too, so that the
    /// store's shorter default attempt timeout does not apply to a loaded test machine).
    pub operation_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            retries: false,
            connect_timeout: Duration::from_secs(10),
            operation_timeout: Duration::from_secs(30),
        }
    }
}

/// A client for `endpoint` with the given interceptors (wrap each with
/// `SharedInterceptor::new`).
pub fn client(
    endpoint: &str,
    options: ClientOptions,
    interceptors: impl IntoIterator<Item = SharedInterceptor>,
) -> Client {
    let retry = if options.retries {
        RetryConfig::standard()
            .with_max_attempts(3)
            .with_initial_backoff(Duration::from_millis(10))
            .with_max_backoff(Duration::from_millis(50))
    } else {
        RetryConfig::disabled()
    };
    let mut config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "idem-tests"))
        .endpoint_url(endpoint)
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .retry_config(retry)
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(options.connect_timeout)
                .operation_attempt_timeout(options.operation_timeout)
                .operation_timeout(options.operation_timeout)
                .build(),
        );
    for interceptor in interceptors {
        config.push_interceptor(interceptor);
    }
    Client::from_conf(config.build())
}
