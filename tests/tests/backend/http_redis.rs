//! The HTTP layer on the Redis store: two service instances behind one Redis, 200 concurrent
//! POSTs with one key, over real HTTP on loopback. The handler runs once; every duplicate gets
//! a 409 while it runs, and a replay after.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use idem_core::Idempotency;
use idem_http::{problem, IdempotencyLayer};
use idem_stores::redis::RedisStore;
use idem_test_servers::redis::target::RedisTarget;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};

const CALLERS: usize = 200;
const HANG: Duration = Duration::from_secs(60);

struct Payments {
    runs: AtomicUsize,
    started: mpsc::UnboundedSender<()>,
    release: Semaphore,
}

async fn create_payment(
    State(payments): State<Arc<Payments>>,
    body: String,
) -> (StatusCode, String) {
    let run = payments.runs.fetch_add(1, Ordering::SeqCst) + 1;
    let _ = payments.started.send(());
    payments.release.acquire().await.unwrap().forget();
    (StatusCode::CREATED, format!("payment {run} for {body}"))
}

/// One service instance on its own Redis connection, listening on a free loopback port.
async fn instance(store: RedisStore, payments: Arc<Payments>) -> String {
    let app = Router::new()
        .route("/payments", post(create_payment))
        .with_state(payments)
        .layer(IdempotencyLayer::new(Idempotency::new(store)));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/payments", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

struct Answer {
    status: u16,
    replayed: bool,
    content_type: Option<String>,
    body: String,
}

async fn pay(client: &reqwest::Client, url: &str) -> Answer {
    let response = client
        .post(url)
        .header("idempotency-key", "pay-1")
        .body("1000 eur")
        .send()
        .await
        .unwrap();
    let header = |name: &str| {
        let value = response.headers().get(name)?;
        Some(value.to_str().unwrap().to_owned())
    };
    let (replayed, content_type) = (header("idempotent-replayed"), header("content-type"));
    Answer {
        status: response.status().as_u16(),
        replayed: replayed.as_deref() == Some("true"),
        content_type,
        body: response.text().await.unwrap(),
    }
}

async fn next(answered: &mut mpsc::UnboundedReceiver<Answer>) -> Answer {
    tokio::time::timeout(HANG, answered.recv())
        .await
        .expect("every caller answers")
        .unwrap()
}

async fn two_hundred_duplicates_on_two_instances_run_the_handler_once() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let (started, mut handler_started) = mpsc::unbounded_channel();
    let payments = Arc::new(Payments {
        runs: AtomicUsize::new(0),
        started,
        release: Semaphore::new(0),
    });
    let urls = Arc::new([
        instance(target.redis_store().clone(), payments.clone()).await,
        instance(target.another_store().await, payments.clone()).await,
    ]);
    let client = with_credentials();

    let (answers, mut answered) = mpsc::unbounded_channel();
    for caller in 0..CALLERS {
        let (client, urls, answers) = (client.clone(), urls.clone(), answers.clone());
        tokio::spawn(async move {
            answers.send(pay(&client, &urls[caller % 2]).await).unwrap();
        });
    }

    // The handler stays blocked until every duplicate has had its answer.
    handler_started.recv().await.unwrap();
    for _ in 1..CALLERS {
        let duplicate = next(&mut answered).await;
        assert_eq!(duplicate.status, 409, "{}", duplicate.body);
        assert_eq!(
            duplicate.content_type.as_deref(),
            Some("application/problem+json")
        );
        assert!(
            duplicate.body.contains(problem::IN_PROGRESS),
            "{}",
            duplicate.body
        );
    }
    payments.release.add_permits(1);
    let first = next(&mut answered).await;
    assert_eq!((first.status, first.replayed), (201, false));
    assert_eq!(first.body, "payment 1 for 1000 eur");

    for url in urls.iter() {
        let retry = pay(&client, url).await;
        assert_eq!((retry.status, retry.replayed), (201, true));
        assert_eq!(retry.body, first.body);
    }
    assert_eq!(payments.runs.load(Ordering::SeqCst), 1);
}

idem_tests::module_tests! {
    async two_hundred_duplicates_on_two_instances_run_the_handler_once,
}

/// A client whose requests carry `Authorization`: the layer refuses keyed requests without a
/// scope.
fn with_credentials() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        "authorization",
        reqwest::header::HeaderValue::from_static("Bearer merchant-42"),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap()
}
