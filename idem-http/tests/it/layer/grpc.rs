//! gRPC unary calls through the layer, with a real tonic server and client over HTTP/2: the key
//! travels in the `idempotency-key` metadata, and the answer is judged by its `grpc-status`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use http::uri::PathAndQuery;
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};
use tonic::server::{ClientStreamingService, NamedService, UnaryService};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Server};
use tonic::{Code, Status, Streaming};
use tonic_prost::ProstCodec;

#[derive(Clone, PartialEq, prost::Message)]
struct ChargeRequest {
    #[prost(string, tag = "1")]
    order: String,
    #[prost(uint64, tag = "2")]
    amount: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Receipt {
    #[prost(uint64, tag = "1")]
    charge: u64,
    #[prost(string, tag = "2")]
    order: String,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The `idem.test.Payments` service, with one unary method, `Charge`.
#[derive(Clone, Default)]
struct Payments {
    runs: Arc<AtomicUsize>,
    /// The status the next runs fail with, when set.
    failing: Arc<Mutex<Option<Code>>>,
    /// When set, each run reports its start and waits for a permit.
    held: Arc<Mutex<Option<Hold>>>,
}

/// Where a held run reports its start, and the permits it waits for.
type Hold = (mpsc::UnboundedSender<()>, Arc<Semaphore>);

impl Payments {
    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    fn fail_with(&self, code: Option<Code>) {
        *self.failing.lock().unwrap() = code;
    }
}

impl NamedService for Payments {
    const NAME: &'static str = "idem.test.Payments";
}

impl tower_service::Service<http::Request<tonic::body::Body>> for Payments {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let payments = self.clone();
        Box::pin(async move {
            let mut grpc =
                tonic::server::Grpc::new(ProstCodec::<Receipt, ChargeRequest>::default());
            if request.uri().path().ends_with("/ChargeBatch") {
                return Ok(grpc.client_streaming(ChargeBatch(payments), request).await);
            }
            Ok(grpc.unary(Charge(payments), request).await)
        })
    }
}

/// `ChargeBatch`, a client-streaming method: one charge for every batch of orders.
struct ChargeBatch(Payments);

impl ClientStreamingService<ChargeRequest> for ChargeBatch {
    type Response = Receipt;
    type Future = BoxFuture<Result<tonic::Response<Receipt>, Status>>;

    fn call(&mut self, request: tonic::Request<Streaming<ChargeRequest>>) -> Self::Future {
        let payments = self.0.clone();
        Box::pin(async move {
            let charge = payments.runs.fetch_add(1, Ordering::SeqCst) as u64 + 1;
            let mut orders = request.into_inner();
            let mut names = Vec::new();
            while let Some(order) = orders.message().await? {
                names.push(order.order);
            }
            let order = names.join(",");
            Ok(tonic::Response::new(Receipt { charge, order }))
        })
    }
}

/// The orders of a batch, sent one message each.
struct Orders(std::vec::IntoIter<ChargeRequest>);

impl futures_core::Stream for Orders {
    type Item = ChargeRequest;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<ChargeRequest>> {
        Poll::Ready(self.0.next())
    }
}

struct Charge(Payments);

impl UnaryService<ChargeRequest> for Charge {
    type Response = Receipt;
    type Future = BoxFuture<Result<tonic::Response<Receipt>, Status>>;

    fn call(&mut self, request: tonic::Request<ChargeRequest>) -> Self::Future {
        let payments = self.0.clone();
        Box::pin(async move {
            let charge = payments.runs.fetch_add(1, Ordering::SeqCst) as u64 + 1;
            let held = payments.held.lock().unwrap().clone();
            if let Some((started, permits)) = held {
                let _ = started.send(());
                permits.acquire().await.unwrap().forget();
            }
            if let Some(code) = *payments.failing.lock().unwrap() {
                return Err(Status::new(code, "the charge failed"));
            }
            let order = request.into_inner().order;
            Ok(tonic::Response::new(Receipt { charge, order }))
        })
    }
}

/// A tonic server on a free loopback port with the layer in front of `payments`, and a client
/// channel to it.
async fn serve(layer: IdempotencyLayer, payments: Payments) -> Channel {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Server::builder()
        .layer(layer)
        .add_service(payments)
        .serve_with_incoming(TcpIncoming::from(listener));
    tokio::spawn(async move { server.await.unwrap() });
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .timeout(crate::support::hang())
        .connect()
        .await
        .unwrap()
}

/// Calls `Charge` with `key` in the `idempotency-key` metadata.
async fn charge(
    channel: &Channel,
    key: &str,
    order: &str,
) -> Result<tonic::Response<Receipt>, Status> {
    let mut client = tonic::client::Grpc::new(channel.clone());
    client.ready().await.unwrap();
    let mut request = tonic::Request::new(ChargeRequest {
        order: order.to_owned(),
        amount: 1000,
    });
    request
        .metadata_mut()
        .insert("idempotency-key", key.parse().unwrap());
    request
        .metadata_mut()
        .insert("authorization", "Bearer grpc-client".parse().unwrap());
    let path = PathAndQuery::from_static("/idem.test.Payments/Charge");
    client.unary(request, path, ProstCodec::default()).await
}

/// Calls `ChargeBatch` with `key`, one message per order.
async fn charge_batch(
    channel: &Channel,
    key: &str,
    orders: &[&str],
) -> Result<tonic::Response<Receipt>, Status> {
    let mut client = tonic::client::Grpc::new(channel.clone());
    client.ready().await.unwrap();
    let messages: Vec<ChargeRequest> = orders
        .iter()
        .map(|order| ChargeRequest {
            order: (*order).to_owned(),
            amount: 1000,
        })
        .collect();
    let mut request = tonic::Request::new(Orders(messages.into_iter()));
    request
        .metadata_mut()
        .insert("idempotency-key", key.parse().unwrap());
    request
        .metadata_mut()
        .insert("authorization", "Bearer grpc-client".parse().unwrap());
    let path = PathAndQuery::from_static("/idem.test.Payments/ChargeBatch");
    client
        .client_streaming(request, path, ProstCodec::default())
        .await
}

fn replayed<T>(response: &tonic::Response<T>) -> bool {
    response
        .metadata()
        .get("idempotent-replayed")
        .is_some_and(|value| value == "true")
}

fn layer() -> IdempotencyLayer {
    IdempotencyLayer::new(Idempotency::new(MemoryStore::new()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_unary_call_gets_the_first_answer_and_runs_nothing() {
    let payments = Payments::default();
    let channel = serve(layer(), payments.clone()).await;

    let first = charge(&channel, "charge-1", "order-7").await.unwrap();
    let retry = charge(&channel, "charge-1", "order-7").await.unwrap();
    assert!(!replayed(&first));
    assert!(replayed(&retry));
    assert_eq!(retry.get_ref(), first.get_ref());
    assert_eq!(retry.get_ref().charge, 1);
    assert_eq!(payments.runs(), 1);

    let other = charge(&channel, "charge-1", "order-8").await.unwrap_err();
    assert_eq!(other.code(), Code::FailedPrecondition);
    assert!(other.message().contains("charge-1"), "{}", other.message());
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_that_means_try_again_releases_the_key() {
    for code in [
        Code::Unavailable,
        Code::Aborted,
        Code::ResourceExhausted,
        Code::DeadlineExceeded,
        Code::Internal,
        Code::InvalidArgument,
    ] {
        let payments = Payments::default();
        let channel = serve(layer(), payments.clone()).await;
        payments.fail_with(Some(code));
        let failed = charge(&channel, "charge-1", "order-7").await.unwrap_err();
        assert_eq!(failed.code(), code);

        payments.fail_with(None);
        let retry = charge(&channel, "charge-1", "order-7").await.unwrap();
        assert!(!replayed(&retry), "{code:?}");
        assert_eq!(payments.runs(), 2, "{code:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definite_failure_is_replayed_with_its_status() {
    let payments = Payments::default();
    let channel = serve(layer(), payments.clone()).await;
    payments.fail_with(Some(Code::NotFound));
    let failed = charge(&channel, "charge-1", "order-7").await.unwrap_err();
    assert_eq!(failed.code(), Code::NotFound);

    payments.fail_with(None);
    let retry = charge(&channel, "charge-1", "order-7").await.unwrap_err();
    assert_eq!(retry.code(), Code::NotFound);
    assert_eq!(retry.message(), "the charge failed");
    assert_eq!(retry.metadata().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_in_flight_is_told_to_retry_later() {
    let payments = Payments::default();
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let permits = Arc::new(Semaphore::new(0));
    *payments.held.lock().unwrap() = Some((started_tx, permits.clone()));
    let channel = serve(layer(), payments.clone()).await;

    let first = {
        let channel = channel.clone();
        tokio::spawn(async move { charge(&channel, "charge-1", "order-7").await })
    };
    tokio::time::timeout(crate::support::hang(), started.recv())
        .await
        .unwrap();
    let duplicate = charge(&channel, "charge-1", "order-7").await.unwrap_err();
    assert_eq!(duplicate.code(), Code::Aborted);
    assert!(duplicate.metadata().get("grpc-retry-pushback-ms").is_some());

    permits.add_permits(1);
    let first = first.await.unwrap().unwrap();
    assert_eq!(first.get_ref().charge, 1);
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_client_streaming_call_is_refused_and_runs_nothing() {
    let payments = Payments::default();
    let channel = serve(layer(), payments.clone()).await;

    let orders = ["order-7", "order-8"];
    let refused = charge_batch(&channel, "batch-1", &orders)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(
        refused.message().contains("exactly one request message"),
        "{}",
        refused.message()
    );
    assert_eq!(payments.runs(), 0, "neither run nor passed through");
}
