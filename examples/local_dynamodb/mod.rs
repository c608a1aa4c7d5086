//! The client of the DynamoDB examples, and a table of its own for each run of one, on the DynamoDB-compatible endpoint in
//! `IDEM_DYNAMODB_ENDPOINT` (plain HTTP: moto, DynamoDB Local, LocalStack), default
//! `http://127.0.0.1:8000`. The client is built as examples/dynamodb_payments.rs builds it; on
//! Lambda, build it from `aws-config` instead.

// Each example uses part of it: the function under the emulator never deletes its table.
#![allow(dead_code)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::Client;
use idem_stores::dynamodb::DynamoDbStore;

const ENDPOINT_VAR: &str = "IDEM_DYNAMODB_ENDPOINT";
const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:8000";

/// The table a run keeps its records in; [`Table::delete`] drops it at the end.
pub struct Table {
    pub store: DynamoDbStore,
    client: Client,
}

/// Creates a table named after `example` and the time, or exits with how to start an endpoint.
pub async fn create(example: &str) -> Table {
    let endpoint = std::env::var(ENDPOINT_VAR).unwrap_or_else(|_| DEFAULT_ENDPOINT.into());
    let client = client(&endpoint);
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let store = DynamoDbStore::new(client.clone(), format!("idem-{example}-{millis}"));
    if let Err(error) = store.create_table().await {
        eprintln!(
            "cannot use the DynamoDB endpoint {endpoint}: {error}\n\n\
             Start one and point {ENDPOINT_VAR} at it, for example:\n    \
             ~/.cache/idem-services/venv/bin/moto_server -H 127.0.0.1 -p 8000 &\n    \
             {ENDPOINT_VAR}=http://127.0.0.1:8000 cargo run -p idem-examples --features lambda --example {example}\n\
             (scripts/services.sh installs moto_server)"
        );
        std::process::exit(2);
    }
    println!("table {} on {endpoint}\n", store.table());
    Table { store, client }
}

impl Table {
    /// Deletes the table.
    pub async fn delete(self) {
        let table = self.store.table();
        if let Err(error) = self.client.delete_table().table_name(table).send().await {
            eprintln!("could not delete table {table}: {error}");
        }
    }
}

/// Milliseconds since the Unix epoch, as Lambda writes an invocation's deadline.
pub fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A client for a local endpoint: plain HTTP, credentials from the environment or dummy ones
/// (local servers accept any), region `us-east-1` unless `AWS_REGION` says otherwise.
pub fn client(endpoint: &str) -> Client {
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let credentials = Credentials::new(
        env("AWS_ACCESS_KEY_ID", "local"),
        env("AWS_SECRET_ACCESS_KEY", "local"),
        std::env::var("AWS_SESSION_TOKEN").ok(),
        None,
        "example",
    );
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(env("AWS_REGION", "us-east-1")))
        .credentials_provider(credentials)
        .endpoint_url(endpoint)
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .retry_config(RetryConfig::standard().with_max_attempts(2))
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(2))
                .operation_timeout(Duration::from_secs(10))
                .build(),
        )
        .build();
    Client::from_conf(config)
}
