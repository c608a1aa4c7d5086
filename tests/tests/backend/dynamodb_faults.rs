//! Faults on the way to DynamoDB: the server killed mid-call, throttling and server errors. The
//! caller gets `Error::Store` with the cause, and the function never runs twice.
//!
//! The server is a real moto_server that the tests kill. Throttling and internal errors cannot
//! be had from it on demand, so for those a fault injector on the client replaces the real
//! server's response to one request (the request itself still reaches the server).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idem_core::{store::Store, Call, Error, Fingerprint, Idempotency, StoreError};
use idem_test_servers::dynamodb::server::TestMoto;
use idem_test_servers::dynamodb::{ClientOptions, Fault, TestDynamo};
use tokio::sync::oneshot;

fn call(idem: &Idempotency, order: &str) -> Call {
    let key = idem.key("charge").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&(order, 10u64)).unwrap())
}

/// Counts the runs of a side effect.
#[derive(Clone, Default)]
struct Runs(Arc<AtomicUsize>);

impl Runs {
    fn charge(&self) -> impl std::future::Future<Output = Result<String, Error>> + Send + 'static {
        let runs = self.0.clone();
        async move {
            let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(format!("receipt-{run}"))
        }
    }

    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// The body ran but its outcome could not be stored: not retryable, 500, the cause named.
fn assert_not_recorded(err: &Error, cause: &str) {
    let Error::NotRecorded { cause: inner, .. } = err else {
        panic!("expected Error::NotRecorded, got {err:?}")
    };
    assert!(
        err.ran_without_record() && !err.is_retryable(),
        "a client must not retry blindly: {err:?}"
    );
    assert_eq!(err.http_status(), 500);
    assert_store_error(inner, cause);
}

fn assert_store_error(err: &Error, cause: &str) {
    let Error::Store { source, .. } = err else {
        panic!("expected Error::Store, got {err:?}")
    };
    assert_eq!(err.http_status(), 503);
    let text = source.to_string();
    assert!(
        text.contains(cause),
        "the source names the cause `{cause}`: {text}"
    );
}

async fn server_killed_while_the_function_runs() {
    let Some(mut db) = TestDynamo::start_owned().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    let runs = Runs::default();
    let (started_tx, started_rx) = oneshot::channel();
    let (proceed_tx, proceed_rx) = oneshot::channel::<()>();
    let first = {
        let idem = idem.clone();
        // The completion is tried again while the lease holds: a short one ends the test soon.
        let call = call(&idem, "o-1").with_lease(Duration::from_secs(3));
        let charge = runs.charge();
        tokio::spawn(async move {
            idem.run(call, async move {
                started_tx.send(()).unwrap();
                proceed_rx.await.unwrap();
                charge.await
            })
            .await
        })
    };
    started_rx.await.unwrap();
    db.moto.kill();
    proceed_tx.send(()).unwrap();
    let err = first.await.unwrap().unwrap_err();
    assert_not_recorded(&err, "PutItem");
    assert_eq!(runs.count(), 1);

    // A retry while the server is down fails closed: the function does not run again.
    let retry = idem
        .run(call(&idem, "o-1"), runs.charge())
        .await
        .unwrap_err();
    assert_store_error(&retry, "PutItem");
    assert_eq!(runs.count(), 1, "the body never runs twice");
}

async fn server_down_before_the_call_fails_closed_and_recovers() {
    let Some(mut db) = TestDynamo::start_owned().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    let runs = Runs::default();
    db.moto.kill();
    let err = idem
        .run(call(&idem, "o-2"), runs.charge())
        .await
        .unwrap_err();
    assert_store_error(&err, "dispatch failure");
    assert_eq!(runs.count(), 0, "no reservation, no run");
    let err = db.store.get(call(&idem, "o-2").key()).await.unwrap_err();
    assert!(matches!(err, StoreError::Backend(_)), "{err:?}");

    // moto keeps tables in memory: after a restart the table is made again.
    db.moto.restart();
    assert!(db.store.create_table().await.unwrap());
    let ok = idem.run(call(&idem, "o-2"), runs.charge()).await.unwrap();
    assert!(!ok.replayed);
    assert_eq!(runs.count(), 1);
}

async fn throttled_reserve_is_a_store_error_and_nothing_runs() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    let runs = Runs::default();
    db.faults.next(Some("PutItem"), Fault::Throttling);
    let err = idem
        .run(call(&idem, "o-3"), runs.charge())
        .await
        .unwrap_err();
    assert_store_error(&err, "ThrottlingException");
    assert_eq!(db.faults.pending(), 0);
    assert_eq!(runs.count(), 0);
    assert!(err.is_retryable());
}

async fn throttled_read_is_a_backend_error_with_the_cause() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    db.faults.next(Some("GetItem"), Fault::Throttling);
    let err = db.store.get(call(&idem, "o-4").key()).await.unwrap_err();
    let StoreError::Backend(source) = &err else {
        panic!("expected Backend, got {err:?}")
    };
    let failed = source
        .downcast_ref::<idem_stores::dynamodb::RequestFailed>()
        .expect("a RequestFailed");
    assert_eq!(failed.operation(), "GetItem");
    assert!(err.to_string().contains("ThrottlingException"), "{err}");
}

async fn server_error_on_reserve_is_a_store_error_and_nothing_runs() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    let runs = Runs::default();
    db.faults.next(Some("PutItem"), Fault::InternalServerError);
    let err = idem
        .run(call(&idem, "o-5"), runs.charge())
        .await
        .unwrap_err();
    assert_store_error(&err, "InternalServerError");
    assert_eq!(runs.count(), 0);
}

/// Plans `count` server errors for the completion from inside the body, after the reserve.
fn failing_completion(
    db: &TestDynamo,
    runs: &Runs,
    count: usize,
) -> impl std::future::Future<Output = Result<String, Error>> + Send + 'static {
    let faults = db.faults.clone();
    let charge = runs.charge();
    async move {
        for _ in 0..count {
            faults.next(Some("PutItem"), Fault::InternalServerError);
        }
        charge.await
    }
}

async fn server_error_on_completion_is_retried_and_the_own_write_recognised() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    let runs = Runs::default();
    // The completion reaches the server but its answer is replaced with a 500, as when an
    // answer is lost on the way back. The engine stores the outcome again; that attempt's
    // condition fails on the item the first one wrote, which the store recognises as its own.
    let before = db.requests.count();
    let ok = idem
        .run(call(&idem, "o-6"), failing_completion(&db, &runs, 1))
        .await
        .unwrap();
    assert!(!ok.replayed);
    assert_eq!(runs.count(), 1);
    assert_eq!(
        db.requests.operations_since(before),
        ["PutItem", "PutItem", "PutItem"],
        "reserve, completion (answer lost), completion again"
    );
    let replay = idem.run(call(&idem, "o-6"), runs.charge()).await.unwrap();
    assert_eq!(replay.value, ok.value);
    assert!(replay.replayed);
    assert_eq!(runs.count(), 1, "the body never runs twice");
}

async fn server_errors_on_every_completion_answer_are_read_back() {
    // A server of its own: the attempts it counts within the lease would be fewer behind other
    // tests' requests on a shared one, which answers one request at a time.
    let Some(db) = TestDynamo::start_owned().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    let runs = Runs::default();
    // Completion is retried while the lease holds: with a 2 s lease, about five times. Every
    // write reached the server and only its answer was lost, so the engine reads the record
    // back before it gives up, and finds its outcome there.
    let lease = Duration::from_secs(2);
    let before = db.requests.count();
    let ok = idem
        .run(
            call(&idem, "o-7").with_lease(lease),
            failing_completion(&db, &runs, 50),
        )
        .await
        .expect("the outcome the store holds, not NotRecorded");
    assert_eq!(ok.value, "receipt-1");
    assert!(!ok.replayed);
    let tried = 50 - db.faults.pending();
    assert!(
        (4..50).contains(&tried),
        "retried while the lease held, and no longer: {tried} attempts"
    );
    assert_eq!(
        db.requests
            .operations_since(before)
            .last()
            .map(String::as_str),
        Some("GetItem"),
        "the record is read back after the last attempt"
    );
    db.faults.clear();
    assert_eq!(runs.count(), 1);
    let retry = idem.run(call(&idem, "o-7"), runs.charge()).await.unwrap();
    assert_eq!(retry.value, "receipt-1");
    assert!(retry.replayed);
    assert_eq!(runs.count(), 1, "the body never runs twice");
}

async fn client_retries_absorb_one_throttled_response() {
    let Some(moto) = TestMoto::start() else {
        return;
    };
    let options = ClientOptions {
        retries: true,
        ..ClientOptions::default()
    };
    let Some(db) = TestDynamo::on(moto, options).await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    let runs = Runs::default();
    // The reserve lands but its answer is replaced: the client retries, and the retry finds
    // the claim's own item.
    db.faults.next(Some("PutItem"), Fault::Throttling);
    let before = db.requests.count();
    let ok = idem.run(call(&idem, "o-8"), runs.charge()).await.unwrap();
    assert!(!ok.replayed);
    assert_eq!(runs.count(), 1);
    assert_eq!(
        db.requests.operations_since(before),
        ["PutItem", "PutItem", "PutItem"],
        "reserve, its retry after the throttled answer, complete"
    );
    let replay = idem.run(call(&idem, "o-8"), runs.charge()).await.unwrap();
    assert!(replay.replayed);

    // The completion lands but its answer is a 500: the retry finds its own completed item.
    let faults = db.faults.clone();
    let before = db.requests.count();
    let ok = idem
        .run(call(&idem, "o-9"), {
            let charge = runs.charge();
            async move {
                faults.next(Some("PutItem"), Fault::InternalServerError);
                charge.await
            }
        })
        .await
        .unwrap();
    assert!(!ok.replayed);
    assert_eq!(runs.count(), 2);
    assert_eq!(
        db.requests.operations_since(before),
        ["PutItem", "PutItem", "PutItem"],
        "reserve, complete, its retry after the lost answer"
    );
    let replay = idem.run(call(&idem, "o-9"), runs.charge()).await.unwrap();
    assert_eq!(replay.value, ok.value);
    assert!(replay.replayed);
    assert_eq!(runs.count(), 2);
}

/// A client built as an application would, with the SDK's defaults (no answer timeout), for
/// `endpoint`.
fn client_with_sdk_defaults(endpoint: &str) -> aws_sdk_dynamodb::Client {
    use aws_sdk_dynamodb::config::retry::RetryConfig;
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "idem-tests"))
        .endpoint_url(endpoint)
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .retry_config(RetryConfig::disabled())
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// An endpoint that accepts connections and never answers: the store's timeouts end the call
/// as a store failure, and the function does not run. (With the SDK's defaults alone the call
/// hung for as long as the connection lived.)
async fn a_silent_endpoint_fails_the_call_instead_of_hanging() {
    use idem_stores::dynamodb::{
        DynamoDbStore, DEFAULT_ATTEMPT_TIMEOUT, DEFAULT_OPERATION_TIMEOUT,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((connection, _)) = listener.accept().await {
            held.push(connection);
        }
    });

    let defaults = DynamoDbStore::new(client_with_sdk_defaults(&endpoint), "idem");
    let timeouts = defaults
        .client()
        .config()
        .timeout_config()
        .cloned()
        .unwrap();
    assert_eq!(
        timeouts.operation_attempt_timeout(),
        Some(DEFAULT_ATTEMPT_TIMEOUT)
    );
    assert_eq!(
        timeouts.operation_timeout(),
        Some(DEFAULT_OPERATION_TIMEOUT)
    );

    let store = DynamoDbStore::builder(client_with_sdk_defaults(&endpoint), "idem")
        .attempt_timeout(Duration::from_millis(300))
        .operation_timeout(Duration::from_millis(900))
        .build();
    let idem = Idempotency::new(store);
    let runs = Runs::default();
    // A generous bound, only so that a hang fails the test instead of stalling the suite.
    let outcome = tokio::time::timeout(
        Duration::from_secs(60),
        idem.run(call(&idem, "o-silent"), runs.charge()),
    )
    .await
    .expect("the store's timeouts end the call");
    assert!(
        matches!(outcome, Err(Error::Store { .. })),
        "a silent endpoint is a store failure: {outcome:?}"
    );
    assert_eq!(runs.count(), 0, "the function did not run");
    silent.abort();
}

idem_tests::module_tests! {
    async a_silent_endpoint_fails_the_call_instead_of_hanging,
    async server_killed_while_the_function_runs,
    async server_down_before_the_call_fails_closed_and_recovers,
    async throttled_reserve_is_a_store_error_and_nothing_runs,
    async throttled_read_is_a_backend_error_with_the_cause,
    async server_error_on_reserve_is_a_store_error_and_nothing_runs,
    async server_error_on_completion_is_retried_and_the_own_write_recognised,
    async server_errors_on_every_completion_answer_are_read_back,
    async client_retries_absorb_one_throttled_response,
}
