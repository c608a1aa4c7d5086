//! A handle on the store a URL names, built as the service builds its own.

use std::sync::Arc;
use std::time::Duration;

use idem_core::store::Store;
use idem_core::Idempotency;
use idem_stores::dynamodb::DynamoDbStore;
use idem_stores::postgres::PostgresStore;
use idem_stores::redis::client::Client;
use idem_stores::redis::{RedisStore, RedisStoreBuilder};

use crate::args::StoreArgs;
use crate::failure::{chain, Failure};
use crate::redact::redacted;
use crate::url::StoreUrl;

/// A handle on the store, and how to name the store in messages.
pub(crate) struct Connected {
    /// The handle, in `--namespace`.
    pub(crate) idem: Idempotency,
    /// The store's URL, without its password.
    pub(crate) store: String,
    /// The DynamoDB store, when the URL names one: to say which `--attribute` a table needs.
    pub(crate) dynamodb: Option<DynamoDbStore>,
}

impl Connected {
    /// The `--attribute` option the command lacks to read the DynamoDB table, as a usage
    /// failure; `None` on other stores, and when the table's names fit.
    pub(crate) async fn misnamed(&self) -> Option<Failure> {
        let store = self.dynamodb.as_ref()?;
        crate::misnamed::diagnose(store).await.map(Failure::usage)
    }

    /// What to say when the DynamoDB partition the command reads (`--partition-value`) holds
    /// no item at all: most likely a value the service does not use.
    pub(crate) async fn empty_partition(&self) -> Option<String> {
        crate::partition::empty_partition(self.dynamodb.as_ref()?).await
    }

    /// The `--attribute` or `--sort-key` option the command lacks to read the DynamoDB table's
    /// key, from the table's key schema alone, as a usage failure: checked before a listing,
    /// which would otherwise read another partition's items, or none, without a word.
    pub(crate) async fn mis_keyed(&self) -> Option<Failure> {
        let store = self.dynamodb.as_ref()?;
        crate::misnamed::key_mismatch(store)
            .await
            .map(Failure::usage)
    }

    /// `error` from the store, said as [`Failure::from_error`] says it, unless the DynamoDB
    /// table's attributes are named otherwise than the command reads them: then that, and
    /// which `--attribute` is missing.
    pub(crate) async fn failure(&self, error: idem_core::Error) -> Failure {
        match self.misnamed().await {
            Some(misnamed) => misnamed,
            None => Failure::from_error(error, &self.store),
        }
    }
}

/// Connects to the store `args` name.
pub(crate) async fn connect(args: &StoreArgs) -> Result<Connected, Failure> {
    let Some(text) = args.store.as_deref().filter(|text| !text.is_empty()) else {
        return Err(Failure::usage(
            "no store given: pass --store URL or set IDEM_STORE (redis://host:port, \
             redis+cluster://host:port,host:port, postgres://user@host/db, dynamodb://TABLE)",
        ));
    };
    crate::secrets::hide_url(text);
    if let Some(endpoint) = &args.endpoint {
        crate::secrets::hide_url(endpoint);
    }
    let url = StoreUrl::parse(text)?;
    check_options(&url, args)?;
    let shown = redacted(text);
    let mut dynamo = None;
    let store: Arc<dyn Store> = match &url {
        StoreUrl::Redis(url) => Arc::new(redis(url, args, &shown).await?),
        StoreUrl::RedisCluster(nodes) => Arc::new(redis_cluster(nodes, args, &shown).await?),
        StoreUrl::Postgres(url) => Arc::new(postgres(url, args, &shown).await?),
        StoreUrl::DynamoDb(table, query) => {
            let args = crate::dynamodb_url::with_url_options(args, query)?;
            if let Some(endpoint) = &args.endpoint {
                crate::secrets::hide_url(endpoint);
            }
            let store = dynamodb(table, &args).await?;
            dynamo = Some(store.clone());
            Arc::new(store)
        }
    };
    Ok(Connected {
        idem: Idempotency::from_arc(store).with_namespace(args.namespace.clone()),
        store: shown,
        dynamodb: dynamo,
    })
}

/// Refuses options that belong to another kind of store than `url`'s.
fn check_options(url: &StoreUrl, args: &StoreArgs) -> Result<(), Failure> {
    let misplaced = |option: &str, owner: &str| {
        Failure::usage(format!(
            "{option} applies to {owner} stores only, and --store names a {} store",
            url.kind()
        ))
    };
    if !matches!(url, StoreUrl::Postgres(_)) {
        if args.table.is_some() {
            return Err(misplaced("--table", "postgres://"));
        }
        if args.schema.is_some() {
            return Err(misplaced("--schema", "postgres://"));
        }
    }
    if !matches!(url, StoreUrl::DynamoDb(..)) {
        if args.region.is_some() {
            return Err(misplaced("--region", "dynamodb://"));
        }
        if args.endpoint.is_some() {
            return Err(misplaced("--endpoint", "dynamodb://"));
        }
        if !args.attributes.is_empty() {
            return Err(misplaced("--attribute", "dynamodb://"));
        }
        if args.sort_key.is_some() {
            return Err(misplaced("--sort-key", "dynamodb://"));
        }
        if args.partition_value.is_some() {
            return Err(misplaced("--partition-value", "dynamodb://"));
        }
        if args.sort_value.is_some() {
            return Err(misplaced("--sort-value", "dynamodb://"));
        }
    }
    Ok(())
}

/// Refuses `rediss://` in a build without the `tls` feature.
#[cfg(not(feature = "tls"))]
fn no_redis_tls(url: &str) -> Result<(), Failure> {
    if url
        .get(..6)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("rediss"))
    {
        return Err(Failure::usage(
            "this idem was built without its `tls` feature, so it can't reach `rediss://` URLs: \
             install it with the feature, or reach the server through a TLS tunnel and pass its \
             local end as redis://127.0.0.1:PORT",
        ));
    }
    Ok(())
}

/// A store on one Redis server.
async fn redis(url: &str, args: &StoreArgs, shown: &str) -> Result<RedisStore, Failure> {
    #[cfg(not(feature = "tls"))]
    no_redis_tls(url)?;
    let client = Client::open(url).map_err(|error| {
        Failure::usage(format!(
            "`{shown}` is not a Redis URL idem can use: {}",
            chain(&error)
        ))
    })?;
    connect_redis(RedisStore::builder(client), args, shown).await
}

/// A store on a Redis Cluster.
async fn redis_cluster(
    nodes: &[String],
    args: &StoreArgs,
    shown: &str,
) -> Result<RedisStore, Failure> {
    let nodes: Vec<&str> = nodes.iter().map(String::as_str).collect();
    #[cfg(not(feature = "tls"))]
    if let Some(node) = nodes.first() {
        no_redis_tls(node)?;
    }
    connect_redis(RedisStore::cluster_builder(&nodes), args, shown).await
}

/// Connects the Redis store `builder` describes, under the options' prefix.
async fn connect_redis(
    mut builder: RedisStoreBuilder,
    args: &StoreArgs,
    shown: &str,
) -> Result<RedisStore, Failure> {
    if let Some(prefix) = &args.prefix {
        builder = builder.prefix(prefix);
    }
    builder
        .connect()
        .await
        .map_err(|error| unreachable(shown, &error))
}

/// A store on a PostgreSQL table.
async fn postgres(url: &str, args: &StoreArgs, shown: &str) -> Result<PostgresStore, Failure> {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(Duration::from_secs(5))
        .connect(url)
        .await
        .map_err(|error| match error {
            sqlx::Error::Configuration(_) => Failure::usage(format!(
                "`{shown}` is not a PostgreSQL URL idem can use: {}",
                chain(&error)
            )),
            _ => unreachable(shown, &error),
        })?;
    let mut builder = PostgresStore::builder(pool);
    if let Some(table) = &args.table {
        builder = builder.table(table);
    }
    if let Some(schema) = &args.schema {
        builder = builder.schema(schema);
    }
    if let Some(prefix) = &args.prefix {
        builder = builder.prefix(prefix);
    }
    Ok(builder.build())
}

/// A store on a DynamoDB table, with the SDK's default credential chain: the environment
/// (`AWS_ACCESS_KEY_ID`...), the profile (`AWS_PROFILE`, `~/.aws/config` and
/// `~/.aws/credentials`, SSO and `credential_process` included), web identity, and container
/// and instance roles. The credentials are resolved here, so that none is a usage failure
/// before any request; the table is reached on the first request.
async fn dynamodb(table: &str, args: &StoreArgs) -> Result<DynamoDbStore, Failure> {
    use aws_sdk_dynamodb::config::{BehaviorVersion, ProvideCredentials, Region};

    // The credential providers (SSO, STS, instance metadata) reach AWS itself, so over
    // HTTPS whatever --endpoint says; DynamoDB, at the endpoint's scheme.
    let mut loader = aws_config::defaults(BehaviorVersion::latest()).http_client(aws_client());
    if let Some(region) = args
        .region
        .clone()
        .or_else(|| env("AWS_REGION"))
        .or_else(|| env("AWS_DEFAULT_REGION"))
    {
        loader = loader.region(Region::new(region));
    }
    let shared = loader.load().await;
    if shared.region().is_none() {
        return Err(Failure::usage(
            "DynamoDB needs a region: pass --region, set AWS_REGION, or give the profile one",
        ));
    }
    let Some(credentials) = shared.credentials_provider() else {
        return Err(no_credentials("no credential provider is configured"));
    };
    if let Err(error) = credentials.provide_credentials().await {
        return Err(no_credentials(&chain(&error)));
    }
    let mut config = aws_sdk_dynamodb::config::Builder::from(&shared)
        .http_client(http_client(args.endpoint.as_deref())?);
    if let Some(endpoint) = &args.endpoint {
        config = config.endpoint_url(endpoint);
    }
    let client = aws_sdk_dynamodb::Client::from_conf(config.build());
    let mut builder = DynamoDbStore::builder(client, table)
        .attribute_names(crate::attribute_names::names(&args.attributes)?);
    if let Some(prefix) = &args.prefix {
        builder = builder.prefix(prefix);
    }
    if let Some(sort_key) = crate::dynamodb_url::sort_key(args)? {
        builder = builder.sort_key(sort_key);
    }
    Ok(builder.build())
}

/// No credentials could be found, for `why`.
fn no_credentials(why: &str) -> Failure {
    Failure::usage(format!(
        "DynamoDB needs credentials, and the default chain found none ({why}): set \
         AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary \
         ones), or AWS_PROFILE for a profile of ~/.aws/config (`aws sso login` first for SSO), \
         or run where a container or instance role is"
    ))
}

/// The HTTP client for AWS's own endpoints (credential providers): HTTPS, or plain HTTP in a
/// build without TLS, where only the environment, profiles and instance metadata work.
fn aws_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    match http_client(None) {
        Ok(client) => client,
        Err(_) => aws_smithy_http_client::Builder::new().build_http(),
    }
}

/// The HTTP client for DynamoDB at `endpoint`: plain HTTP for an `http://` endpoint, HTTPS
/// otherwise.
fn http_client(
    endpoint: Option<&str>,
) -> Result<aws_sdk_dynamodb::config::SharedHttpClient, Failure> {
    let plain = endpoint.is_some_and(|endpoint| endpoint.starts_with("http://"));
    if plain {
        return Ok(aws_smithy_http_client::Builder::new().build_http());
    }
    #[cfg(feature = "tls")]
    {
        use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
        Ok(aws_smithy_http_client::Builder::new()
            .tls_provider(Provider::Rustls(CryptoMode::Ring))
            .build_https())
    }
    #[cfg(not(feature = "tls"))]
    Err(Failure::usage(
        "this idem was built without TLS (feature `tls`), so it reaches DynamoDB only at an \
         `http://` --endpoint",
    ))
}

/// The value of environment variable `name`, if set and not empty.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// The store at `shown` could not be reached.
fn unreachable(shown: &str, error: &dyn std::error::Error) -> Failure {
    Failure::failed(format!(
        "could not connect to the store at {shown}: {}. Check the URL and that the server is up",
        chain(error)
    ))
}
