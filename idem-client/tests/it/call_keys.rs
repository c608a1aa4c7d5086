//! Requests sent from inside an idempotent call carry the call's downstream keys: the same in
//! every attempt of the call, one per operation; outside a call, a random key as ever. Against
//! a real server on loopback that records the key of every request it gets.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::{extract::State, http::HeaderMap, routing::post, Router};
use idem_client::reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use idem_client::{key_of, operation, IdempotentRetry};
use idem_conformance::ReferenceStore;
use idem_core::store::Store;
use idem_core::{context, step, Call, Error, Fingerprint, Idempotency, ManualClock};

const LEASE: Duration = Duration::from_secs(30);

/// The keys the server got, in order.
type Received = Arc<Mutex<Vec<String>>>;

/// A server that records every request's `Idempotency-Key`, and its URL.
async fn recorder() -> (String, Received) {
    let received = Received::default();
    let app = Router::new()
        .route(
            "/v1/charges/{order}",
            post(
                |State(received): State<Received>, headers: HeaderMap| async move {
                    let key = headers
                        .get("idempotency-key")
                        .map(|value| value.to_str().unwrap().to_owned())
                        .unwrap_or_default();
                    received.lock().unwrap().push(key);
                    "charged"
                },
            ),
        )
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/v1/charges/ord_42",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, received)
}

fn client(retry: IdempotentRetry) -> ClientWithMiddleware {
    ClientBuilder::new(idem_client::reqwest::Client::new())
        .with(retry)
        .build()
}

fn call(idem: &Idempotency) -> Call {
    let key = idem.key("shop.checkout").part("ord_42").finish().unwrap();
    Call::new(key, Fingerprint::of("ord_42").unwrap()).with_lease(LEASE)
}

/// Sends what a checkout body sends: one request in a step, two named ones, and the same
/// unnamed request twice outside steps. Returns the keys the responses name.
async fn checkout(client: &ClientWithMiddleware, url: &str) -> Result<Vec<String>, Error> {
    let send = |request: idem_client::reqwest_middleware::RequestBuilder| async move {
        let response = request.send().await.expect("the server answers");
        Ok::<_, Error>(key_of(&response).expect("a keyed request").to_owned())
    };
    let mut keys = vec![step("charge", send(client.post(url))).await?];
    keys.push(send(client.post(url).with_extension(operation("deposit"))).await?);
    keys.push(send(client.post(url).with_extension(operation("balance"))).await?);
    keys.push(send(client.post(url)).await?);
    keys.push(send(client.post(url)).await?);
    Ok(keys)
}

#[tokio::test]
async fn inside_a_call_each_operation_gets_the_calls_key_for_it() {
    let (url, received) = recorder().await;
    let client = client(IdempotentRetry::default());
    let idem = Idempotency::new(ReferenceStore::new());
    let (keys, expected) = idem
        .run(call(&idem), async {
            let ctx = context().unwrap();
            let keys = checkout(&client, &url).await?;
            let expected = [
                ctx.downstream_key("deposit").to_string(),
                ctx.downstream_key("balance").to_string(),
            ];
            Ok::<_, Error>((keys, expected))
        })
        .await
        .unwrap()
        .value;
    assert_eq!(*received.lock().unwrap(), keys, "sent as the responses say");
    assert_eq!(
        keys[1..3],
        expected,
        "a named request: the call's key of its name"
    );
    let distinct: std::collections::HashSet<_> = keys.iter().collect();
    assert_eq!(
        distinct.len(),
        keys.len(),
        "one key per operation: {keys:?}"
    );
    for key in &keys {
        assert!(key.starts_with(idem_core::DOWNSTREAM_KEY_PREFIX), "{key}");
        assert_eq!(
            idem_protocol::key::parse(key.as_bytes()).as_deref(),
            Ok(&**key)
        );
    }
}

#[tokio::test]
async fn a_takeover_in_another_process_sends_the_same_keys() {
    let (url, received) = recorder().await;
    let client = client(IdempotentRetry::default());
    let (clock, store): (ManualClock, Arc<dyn Store>) =
        (ManualClock::new(), Arc::new(ReferenceStore::new()));
    let handle = || Idempotency::from_arc(store.clone()).with_clock(clock.clone());
    let (first, second) = (handle(), handle());
    // Attempt 1 sends everything, then dies before its outcome is recorded.
    let (sent, heard) = tokio::sync::oneshot::channel();
    let abandoned = first.run(call(&first), async {
        let keys = checkout(&client, &url).await?;
        let _ = sent.send(keys);
        std::future::pending::<Result<(), Error>>().await
    });
    let keys = tokio::select! {
        _ = abandoned => panic!("the first attempt never ends"),
        keys = heard => keys.unwrap(),
    };
    clock.advance(LEASE * 3);
    let again = second
        .run(call(&second), async {
            assert_eq!(context().unwrap().attempt(), 2, "a takeover");
            checkout(&client, &url).await
        })
        .await
        .unwrap()
        .value;
    // The step was recorded: the takeover replays it and sends the rest again.
    assert_eq!(again, keys, "the same keys in both attempts");
    assert_eq!(
        received.lock().unwrap().len(),
        9,
        "the step's request went once"
    );
}

#[tokio::test]
async fn outside_a_call_or_turned_off_keys_are_random_and_a_callers_own_wins() {
    let (url, _received) = recorder().await;
    let derived = client(IdempotentRetry::default());
    let random = client(IdempotentRetry::builder().downstream_keys(false).build());
    let key_sent = |response: idem_client::reqwest::Response| key_of(&response).unwrap().to_owned();
    let outside = key_sent(derived.post(&url).send().await.unwrap());
    assert!(uuid_like(&outside), "{outside}");
    let idem = Idempotency::new(ReferenceStore::new());
    let (turned_off, own) = idem
        .run(call(&idem), async {
            let turned_off = key_sent(random.post(&url).send().await.unwrap());
            let own = key_sent(
                derived
                    .post(&url)
                    .header("idempotency-key", "mine-1")
                    .send()
                    .await
                    .unwrap(),
            );
            Ok::<_, Error>((turned_off, own))
        })
        .await
        .unwrap()
        .value;
    assert!(uuid_like(&turned_off), "{turned_off}");
    assert_eq!(own, "mine-1");
}

#[tokio::test]
async fn a_call_whose_lease_is_known_lost_sends_nothing() {
    let (url, received) = recorder().await;
    let client = client(IdempotentRetry::default());
    let clock = ManualClock::new();
    let idem = Idempotency::new(ReferenceStore::new()).with_clock(clock.clone());
    let refused = Mutex::new(None);
    let _ = idem
        .run(call(&idem), async {
            clock.advance(LEASE + Duration::from_secs(1));
            let sent = client.post(&url).send().await;
            *refused.lock().unwrap() = Some(refused_for_lease_lost(sent));
            Ok::<_, Error>(())
        })
        .await;
    assert!(
        received.lock().unwrap().is_empty(),
        "nothing reached the server"
    );
    let refused = refused.into_inner().unwrap();
    assert_eq!(refused, Some(true), "refused for the lease lost");
}

#[tokio::test]
async fn a_call_whose_lease_passes_between_attempts_does_not_send_again() {
    let clock = ManualClock::new();
    let attempts = Arc::new(Mutex::new(0_u32));
    // Unavailable once, and the call's lease passes while it answers: the retry that would
    // follow is sent by an owner that has lost its key.
    let answer = {
        let (clock, attempts) = (clock.clone(), attempts.clone());
        move || {
            *attempts.lock().unwrap() += 1;
            clock.advance(LEASE + Duration::from_secs(1));
            (axum::http::StatusCode::SERVICE_UNAVAILABLE, "busy")
        }
    };
    let app = Router::new().route("/v1/charges/ord_42", post(move || async move { answer() }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/v1/charges/ord_42",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let client = client(IdempotentRetry::default());
    let idem = Idempotency::new(ReferenceStore::new()).with_clock(clock.clone());
    let refused = Mutex::new(None);
    let _ = idem
        .run(call(&idem), async {
            let sent = client.post(&url).send().await;
            *refused.lock().unwrap() = Some(refused_for_lease_lost(sent));
            Ok::<_, Error>(())
        })
        .await;
    assert_eq!(
        *attempts.lock().unwrap(),
        1,
        "no attempt after the lease passed"
    );
    let refused = refused.into_inner().unwrap();
    assert_eq!(refused, Some(true), "refused for the lease lost");
}

/// Whether a send failed as one from a call whose lease is known lost: `NotRecorded`, caused
/// by `LeaseLost`.
fn refused_for_lease_lost(
    sent: Result<idem_client::reqwest::Response, idem_client::reqwest_middleware::Error>,
) -> bool {
    match sent {
        Err(idem_client::reqwest_middleware::Error::Middleware(error)) => matches!(
            error.downcast_ref::<Error>(),
            Some(Error::NotRecorded { cause, .. })
                if matches!(**cause, Error::LeaseLost { .. })
        ),
        _ => false,
    }
}

fn uuid_like(key: &str) -> bool {
    key.len() == 36 && key.bytes().filter(|&b| b == b'-').count() == 4
}
