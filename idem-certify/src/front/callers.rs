//! The callers of a front-end run: tasks of the coordinator, each sending requests through
//! idem-client (its keys, retries and timeouts) to a server picked at random, as one of a few
//! principals, on keys that every principal and caller reuses for a few seconds: concurrent
//! duplicates, retries, and one key under several principals, on purpose. An operation that
//! gets no answer (its server killed, stopped or cut off) is sent again, with its key, to
//! another server than the one that failed it, as a client that gave up on one server does.

use std::sync::Arc;
use std::time::Duration;

use idem_client::reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use idem_client::IdempotentRetry;

use crate::check::front::model::ClientEvent;
use crate::front::endpoint::Shape;
use crate::front::fleet::Urls;
use crate::front::lines::JsonLines;
use crate::front::plan::{ORDERS, REQUEST};
use crate::history::now_micros;

/// The principals requests are sent as.
const PRINCIPALS: [&str; 3] = ["alice", "bob", "carol"];
/// How many keys are hot at once.
const HOT_KEYS: u64 = 8;
/// How often half the hot keys are replaced by new ones, in microseconds.
const HOT_FOR: u64 = 1_000_000;
/// How many times an operation is sent, each time to a server picked anew (never the one
/// that just failed it), until it is answered: a caller whose server went away sends its
/// request again elsewhere, with its key.
const SENDS: u32 = 3;

/// What every caller shares.
pub(crate) struct Calling {
    /// The run's id, which every key begins with.
    pub(crate) run: String,
    /// When the run began and when callers stop sending, in microseconds since the epoch.
    pub(crate) span: (u64, u64),
    /// The servers' URLs.
    pub(crate) urls: Urls,
    /// The history: [`ClientEvent`]s.
    pub(crate) history: JsonLines,
    /// The shapes requests take, by key.
    pub(crate) shapes: &'static [Shape],
    /// The client.
    pub(crate) client: ClientWithMiddleware,
}

/// The callers' client: idem-client's retries over reqwest, each attempt bounded by two
/// leases and the whole send by three.
pub(crate) fn client(lease: Duration) -> Result<ClientWithMiddleware, String> {
    let http = idem_client::reqwest::Client::builder()
        .timeout(lease * 2)
        .build()
        .map_err(|error| error.to_string())?;
    let retry = IdempotentRetry::builder()
        .backoff(Duration::from_millis(50), Duration::from_millis(500))
        .max_elapsed(lease * 3)
        .build();
    Ok(ClientBuilder::new(http).with(retry).build())
}

/// Caller `caller` sends requests until the deadline.
pub(crate) async fn call(calling: Arc<Calling>, caller: u32, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let (began, until) = calling.span;
    let mut sent = 0u64;
    while now_micros() < until {
        let hot = (now_micros() - began) / HOT_FOR * HOT_KEYS / 2;
        let number = hot + rng.u64(..HOT_KEYS);
        let principal = PRINCIPALS[rng.usize(..PRINCIPALS.len())];
        let key = format!("{}-k{number}", calling.run);
        let shape = calling.shapes[(number % calling.shapes.len() as u64) as usize];
        let payload = format!("{key}:{}", shape.name());
        let mut failed_at: Option<String> = None;
        for _ in 0..SENDS {
            let server = {
                let urls = calling.urls.lock().unwrap();
                let others: Vec<&String> = urls
                    .iter()
                    .filter(|url| Some(*url) != failed_at.as_ref())
                    .collect();
                match others.is_empty() {
                    true => urls[rng.usize(..urls.len())].clone(),
                    false => others[rng.usize(..others.len())].clone(),
                }
            };
            let call = format!("c{caller}.{sent}");
            sent += 1;
            calling.history.write(&ClientEvent::Send {
                call: call.clone(),
                principal: principal.to_owned(),
                key: key.clone(),
                payload: payload.clone(),
                server: server.clone(),
                t: now_micros(),
            });
            let event = send(&calling.client, &server, principal, &key, &payload, call).await;
            calling.history.write(&event);
            if answered(&event) {
                break;
            }
            failed_at = Some(server);
        }
        tokio::time::sleep(Duration::from_millis(rng.u64(..50))).await;
    }
}

/// Whether the operation got its answer: any but a failure worth sending again elsewhere (no
/// answer, a 5xx, a 409 still in progress).
fn answered(event: &ClientEvent) -> bool {
    match event {
        ClientEvent::Answer { status, .. } => *status < 500 && *status != 409,
        _ => false,
    }
}

async fn send(
    client: &ClientWithMiddleware,
    server: &str,
    principal: &str,
    key: &str,
    payload: &str,
    call: String,
) -> ClientEvent {
    let sent = client
        .post(format!("{server}{ORDERS}"))
        .bearer_auth(principal)
        .header(idem_client::IDEMPOTENCY_KEY, key)
        .header(REQUEST, &call)
        .body(payload.to_owned())
        .send()
        .await;
    let failed = |call: String, error: String| ClientEvent::Failed {
        call,
        error,
        t: now_micros(),
    };
    let response = match sent {
        Ok(response) => response,
        Err(error) => return failed(call, error.to_string()),
    };
    let status = response.status().as_u16();
    let replayed = idem_client::was_replayed(&response);
    match response.text().await {
        Ok(body) => ClientEvent::Answer {
            call,
            status,
            body,
            replayed,
            t: now_micros(),
        },
        Err(error) => failed(call, format!("reading the body: {error}")),
    }
}
