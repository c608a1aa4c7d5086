//! The cases, each run on one front end: each asserts the contract and returns what the
//! client saw, for the two front ends to be compared.

use idem_http::problem;

use crate::frameworks::fronts::{start, Front, Running, Setup, HANG};

/// What a client saw of one answer, as the two front ends must agree on it.
#[derive(Debug, PartialEq, Eq)]
pub struct Seen {
    pub status: u16,
    pub replayed: bool,
    pub retry_after: bool,
    pub content_encoding: Option<String>,
    /// The problem document's `type`, or the body itself.
    pub said: String,
}

async fn seen(response: reqwest::Response) -> Seen {
    let header = |name: &str| {
        let value = response.headers().get(name)?;
        Some(value.to_str().unwrap().to_owned())
    };
    let replayed = header("idempotent-replayed").as_deref() == Some("true");
    let retry_after = header("retry-after").is_some();
    let content_encoding = header("content-encoding");
    let problem = header("content-type").as_deref() == Some("application/problem+json");
    let status = response.status().as_u16();
    let body = response.bytes().await.unwrap();
    let said = if problem {
        let document: serde_json::Value = serde_json::from_slice(&body).unwrap();
        document["type"].as_str().unwrap().to_owned()
    } else if content_encoding.is_some() {
        format!("{} encoded bytes", body.len())
    } else {
        String::from_utf8(body.to_vec()).unwrap()
    };
    Seen {
        status,
        replayed,
        retry_after,
        content_encoding,
        said,
    }
}

async fn send(request: reqwest::RequestBuilder) -> Seen {
    seen(request.send().await.unwrap()).await
}

pub async fn a_duplicate_is_replayed(front: Front) -> Vec<Seen> {
    let shop = start(front, Setup::default()).await;
    let first = send(shop.post("/payments", "pay-1", r#"{"amount":10}"#)).await;
    let retry = send(shop.post("/payments", "pay-1", r#"{"amount":10}"#)).await;
    assert_eq!((first.status, first.replayed), (201, false));
    assert_eq!((retry.status, retry.replayed), (201, true));
    assert_eq!(retry.said, first.said);
    assert_eq!(shop.shop.runs(), 1);
    vec![first, retry]
}

pub async fn a_duplicate_in_flight_gets_409_with_retry_after(front: Front) -> Vec<Seen> {
    let shop = start(front, Setup::default()).await;
    let first = tokio::spawn(shop.post("/held", "pay-1", "{}").send());
    tokio::time::timeout(HANG, shop.shop.started.notified())
        .await
        .unwrap();
    let duplicate = send(shop.post("/held", "pay-1", "{}")).await;
    assert_eq!(duplicate.status, 409);
    assert!(duplicate.retry_after, "a 409 says when to retry");
    assert_eq!(duplicate.said, problem::IN_PROGRESS);
    shop.shop.gate.add_permits(1);
    let first = seen(first.await.unwrap().unwrap()).await;
    assert_eq!(first.status, 201);
    assert_eq!(shop.shop.runs(), 1);
    vec![duplicate, first]
}

pub async fn a_changed_body_gets_422(front: Front) -> Vec<Seen> {
    let shop = start(front, Setup::default()).await;
    let first = send(shop.post("/payments", "pay-1", r#"{"amount":10}"#)).await;
    let changed = send(shop.post("/payments", "pay-1", r#"{"amount":99}"#)).await;
    assert_eq!(changed.status, 422);
    assert_eq!(changed.said, problem::KEY_REUSED);
    assert_eq!(shop.shop.runs(), 1);
    vec![first, changed]
}

pub async fn a_json_retry_replays_by_its_bytes_or_its_value(front: Front) -> Vec<Seen> {
    let shop = start(front, Setup::default()).await;
    let json = |body: &str| {
        shop.post("/payments", "pay-1", body)
            .header("content-type", "application/json")
    };
    let first = send(json(r#"{"amount":10,"to":"ann"}"#)).await;
    let same_bytes = send(json(r#"{"amount":10,"to":"ann"}"#)).await;
    let reordered = send(json(r#"{ "to": "ann", "amount": 10 }"#)).await;
    let other_value = send(json(r#"{"amount":99,"to":"ann"}"#)).await;
    assert_eq!((first.status, first.replayed), (201, false));
    assert_eq!((same_bytes.status, same_bytes.replayed), (201, true));
    assert_eq!((reordered.status, reordered.replayed), (201, true));
    assert_eq!(
        (&same_bytes.said, &reordered.said),
        (&first.said, &first.said)
    );
    assert_eq!(other_value.status, 422);
    assert_eq!(other_value.said, problem::KEY_REUSED);
    assert_eq!(shop.shop.runs(), 1);
    vec![first, same_bytes, reordered, other_value]
}

pub async fn a_keyed_request_without_a_principal_gets_400(front: Front) -> Vec<Seen> {
    let shop = start(front, Setup::default()).await;
    let anonymous = shop
        .client
        .post(format!("{}/payments", shop.url))
        .header("idempotency-key", "pay-1")
        .body("{}");
    let refused = send(anonymous).await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.said, problem::UNSCOPED);
    assert_eq!(shop.shop.runs(), 0);
    vec![refused]
}

pub async fn principals_from_request_extensions_keep_their_keys_apart(front: Front) -> Vec<Seen> {
    let setup = Setup {
        principal_from_extension: true,
        ..Setup::default()
    };
    let shop = start(front, setup).await;
    let as_user = |user: &str| shop.post("/payments", "pay-1", "{}").header("x-user", user);
    let ann = send(as_user("ann")).await;
    let bob = send(as_user("bob")).await;
    let ann_again = send(as_user("ann")).await;
    assert_eq!((ann.status, ann.replayed), (201, false));
    assert_eq!(
        (bob.status, bob.replayed),
        (201, false),
        "another principal's key"
    );
    assert!(ann_again.replayed);
    assert_eq!(shop.shop.runs(), 2);
    let without = send(shop.post("/payments", "pay-2", "{}")).await;
    assert_eq!(without.status, 500, "the principal's middleware is missing");
    assert_eq!(without.said, problem::SCOPE_MISSING);
    assert_eq!(shop.shop.runs(), 2);
    vec![ann, bob, ann_again, without]
}

pub async fn a_client_over_its_quota_gets_429(front: Front) -> Vec<Seen> {
    let setup = Setup {
        quota: Some(1),
        ..Setup::default()
    };
    let shop = start(front, setup).await;
    let first = send(shop.post("/payments", "pay-1", "{}")).await;
    let over = send(shop.post("/payments", "pay-2", "{}")).await;
    let replay = send(shop.post("/payments", "pay-1", "{}")).await;
    assert_eq!(first.status, 201);
    assert_eq!(over.status, 429);
    assert!(over.retry_after);
    assert_eq!(over.said, problem::QUOTA_EXCEEDED);
    assert!(replay.replayed, "keys already used are still replayed");
    assert_eq!(shop.shop.runs(), 1);
    vec![first, over, replay]
}

pub async fn a_stream_reaches_its_client_while_the_handler_produces(front: Front) -> Vec<Seen> {
    let shop = start(front, Setup::default()).await;
    if let Front::Lambda = front {
        // `lambda_http::run` answers whole: the stream reaches its client once it has ended.
        shop.shop.more_events.notify_one();
        let whole = send(shop.post("/events", "events-1", "{}")).await;
        assert_eq!(
            (whole.status, whole.said.as_str()),
            (200, "data: first\n\ndata: second\n\n")
        );
    } else {
        stream_as_produced(&shop).await;
    }
    let replay = send(shop.post("/events", "events-1", "{}")).await;
    assert!(replay.replayed);
    assert_eq!(replay.said, "data: first\n\ndata: second\n\n");
    assert_eq!(shop.shop.runs(), 1);
    vec![replay]
}

/// The first event of `/events` reaches the client while the handler holds the second.
async fn stream_as_produced(shop: &Running) {
    let mut streamed = shop.post("/events", "events-1", "{}").send().await.unwrap();
    assert_eq!(streamed.status(), 200);
    let first = tokio::time::timeout(HANG, streamed.chunk())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        first.as_deref(),
        Some(&b"data: first\n\n"[..]),
        "the first event arrives while the handler still holds the second"
    );
    shop.shop.more_events.notify_one();
    let rest = streamed.bytes().await.unwrap();
    assert_eq!(&rest[..], b"data: second\n\n");
}

pub async fn a_client_that_disconnects_leaves_its_key_handled_once(front: Front) -> Vec<Seen> {
    let setup = Setup {
        duplicates_wait: true,
        ..Setup::default()
    };
    let shop = start(front, setup).await;
    let gone = tokio::spawn(shop.post("/held", "pay-1", "{}").send());
    tokio::time::timeout(HANG, shop.shop.started.notified())
        .await
        .unwrap();
    // The client goes away mid-handler: its connection is dropped with the request.
    gone.abort();
    let _ = gone.await;
    shop.shop.gate.add_permits(1);
    tokio::time::timeout(HANG, shop.shop.finished.notified())
        .await
        .unwrap();
    let retry = send(shop.post("/held", "pay-1", "{}")).await;
    assert_eq!((retry.status, retry.replayed), (201, true));
    assert_eq!(retry.said, "held: {}");
    assert_eq!(shop.shop.runs(), 1);
    vec![retry]
}

pub async fn compression_outside_the_layer_encodes_each_replay_anew(front: Front) -> Vec<Seen> {
    let setup = Setup {
        compressed: true,
        ..Setup::default()
    };
    let shop = start(front, setup).await;
    let long = "x".repeat(4096);
    let gzip = |request: reqwest::RequestBuilder| request.header("accept-encoding", "gzip");
    let first = send(gzip(shop.post("/payments", "pay-1", long.clone()))).await;
    let plain = send(
        shop.post("/payments", "pay-1", long.clone())
            .header("accept-encoding", "identity"),
    )
    .await;
    let again = send(gzip(shop.post("/payments", "pay-1", long.clone()))).await;
    assert_eq!(first.content_encoding.as_deref(), Some("gzip"));
    assert!(plain.replayed);
    assert_eq!(plain.content_encoding, None);
    assert_eq!(plain.said, format!("charged: {long}"));
    assert!(again.replayed);
    assert_eq!(again.content_encoding.as_deref(), Some("gzip"));
    assert_eq!(shop.shop.runs(), 1);
    // The two compressors differ in their bytes, not in what they encode.
    vec![plain]
}

pub async fn a_status_not_stored_releases_the_key(front: Front) -> Vec<Seen> {
    let shop = start(front, Setup::default()).await;
    let failed = send(shop.post("/payments", "pay-1", "fail")).await;
    let retried = send(shop.post("/payments", "pay-1", "fail")).await;
    assert_eq!((failed.status, failed.replayed), (503, false));
    assert_eq!((retried.status, retried.replayed), (503, false));
    assert_eq!(shop.shop.runs(), 2, "a 503 is not stored: the retry runs");
    vec![failed, retried]
}

pub async fn a_body_over_the_limit_gets_413_before_anything_runs(front: Front) -> Vec<Seen> {
    let setup = Setup {
        max_request_body: Some(64),
        ..Setup::default()
    };
    let shop = start(front, setup).await;
    let refused = send(shop.post("/payments", "pay-1", "y".repeat(65))).await;
    assert_eq!(refused.status, 413);
    assert_eq!(refused.said, problem::BODY_TOO_LARGE);
    let within = send(shop.post("/payments", "pay-1", "y".repeat(64))).await;
    assert_eq!(within.status, 201);
    assert_eq!(shop.shop.runs(), 1);
    vec![refused, within]
}

pub async fn a_handler_that_panics_keeps_its_key_held(front: Front) -> Vec<Seen> {
    let shop = start(front, Setup::default()).await;
    let panicked = send(shop.post("/panics", "pay-1", "{}")).await;
    assert_eq!(panicked.status, 500);
    assert_eq!(panicked.said, problem::NOT_RECORDED);
    // The effect may have happened: the retry is told to wait, and nothing runs again.
    let retry = send(shop.post("/panics", "pay-1", "{}")).await;
    assert_eq!(retry.status, 409);
    assert_eq!(retry.said, problem::IN_PROGRESS);
    // The panic ended that request only: the same server answers the next one.
    let next = send(shop.post("/panics", "pay-2", "{}")).await;
    assert_eq!(next.said, problem::NOT_RECORDED);
    assert_eq!(shop.shop.runs(), 2);
    vec![panicked, retry, next]
}

pub async fn principals_read_by_the_applications_closure_keep_their_keys_apart(
    front: Front,
) -> Vec<Seen> {
    let setup = Setup {
        principal_from_closure: true,
        ..Setup::default()
    };
    let shop = start(front, setup).await;
    let as_user = |user: &str| shop.post("/payments", "pay-1", "{}").header("x-user", user);
    let u1 = send(as_user("u1")).await;
    let u2 = send(as_user("u2")).await;
    assert_eq!((u1.status, u1.replayed), (201, false));
    assert_eq!(
        (u2.status, u2.replayed),
        (201, false),
        "another principal's key: never the first one's answer"
    );
    assert_eq!(shop.shop.runs(), 2);
    vec![u1, u2]
}

pub async fn two_clients_with_one_key_get_a_run_each(front: Front) -> Vec<Seen> {
    let shop = start(front, Setup::default()).await;
    // One `Authorization` each: cargo-lambda's function URL keeps only the first of two.
    let as_client = |token: &str| {
        shop.client
            .post(format!("{}/payments", shop.url))
            .header("idempotency-key", "pay-1")
            .header("authorization", format!("Bearer {token}"))
            .body("{}")
    };
    let ann = send(as_client("ann")).await;
    let bob = send(as_client("bob")).await;
    assert_eq!((ann.status, ann.replayed), (201, false));
    assert_eq!((bob.status, bob.replayed), (201, false));
    assert_eq!(shop.shop.runs(), 2);
    vec![ann, bob]
}

pub async fn the_handler_runs_inside_the_engines_call(front: Front) -> Vec<Seen> {
    let shop = start(front, Setup::default()).await;
    let first = send(shop.post("/context", "ctx-1", "{}")).await;
    assert_eq!(
        (first.status, first.said.as_str()),
        (201, "attempt 1 of a call")
    );
    vec![first]
}

pub async fn a_step_before_a_502_runs_once_and_binds_the_key_to_its_request(
    front: Front,
) -> Vec<Seen> {
    let shop = start(front, Setup::default()).await;
    let failed = send(shop.post("/steps", "order-1", r#"{"amount":10}"#)).await;
    assert_eq!(failed.status, 502);
    // The charge was recorded: the key is the first request's, and a corrected body is not a
    // second order.
    let corrected = send(shop.post("/steps", "order-1", r#"{"amount":12}"#)).await;
    assert_eq!(corrected.status, 422);
    assert_eq!(corrected.said, problem::KEY_REUSED);
    let retry = send(shop.post("/steps", "order-1", r#"{"amount":10}"#)).await;
    assert_eq!(
        (retry.status, retry.said.as_str()),
        (201, r#"charge 1: {"amount":10}"#)
    );
    assert_eq!(
        shop.shop.charges(),
        1,
        "the retry resumed after the recorded charge"
    );
    assert_eq!(shop.shop.runs(), 2);
    vec![failed, corrected, retry]
}

pub async fn a_keyed_grpc_request_that_is_not_one_message_is_refused(front: Front) -> Vec<Seen> {
    let shop = start(front, Setup::default()).await;
    let grpc = || {
        shop.post("/payments", "pay-1", r#"{"amount":10}"#)
            .header("content-type", "application/grpc")
    };
    let response = grpc().send().await.unwrap();
    let status = response.headers().get("grpc-status").cloned();
    let refused = seen(response).await;
    assert_eq!(status.as_ref().map(|s| s.to_str().unwrap()), Some("3"));
    let again = send(grpc()).await;
    assert_eq!(shop.shop.runs(), 0, "neither run nor passed through");
    vec![refused, again]
}

pub async fn a_service_error_after_the_handler_began_holds_its_key(front: Front) -> Vec<Seen> {
    let shop = start(front, Setup::default()).await;
    let failed = send(shop.post("/fails", "pay-1", "{}")).await;
    if let Front::Lambda = front {
        // A function's error has no status of its own: its front answers one (500 from
        // cargo-lambda's function URL, 502 from API Gateway and Lambda's function URLs).
        assert_eq!(
            failed.status, 500,
            "the function URL answers the function's error"
        );
    } else {
        assert_eq!(
            failed.status, 504,
            "the front end answers with its service's error"
        );
    }
    // The handler may have charged: as after a panic, the key is held until its lease
    // passes, and the retry is told to wait.
    let retry = send(shop.post("/fails", "pay-1", "{}")).await;
    assert_eq!(
        (retry.status, retry.said.as_str()),
        (409, problem::IN_PROGRESS)
    );
    assert!(retry.retry_after, "a 409 says when to retry");
    assert_eq!(shop.shop.runs(), 1);
    // What the service's error looks like is the front end's own.
    vec![retry]
}

pub async fn a_replay_and_a_first_answer_of_known_length_carry_content_length(
    front: Front,
) -> Vec<Seen> {
    let shop = start(front, Setup::default()).await;
    let mut answers = Vec::new();
    for (what, replayed) in [("the first answer", false), ("the replay", true)] {
        let response = shop
            .post("/payments", "pay-1", r#"{"amount":10}"#)
            .send()
            .await
            .unwrap();
        let header = |name: &str| {
            let value = response.headers().get(name)?;
            Some(value.to_str().unwrap().to_owned())
        };
        let (length, chunked) = (header("content-length"), header("transfer-encoding"));
        let seen = seen(response).await;
        assert_eq!((seen.status, seen.replayed), (201, replayed), "{what}");
        assert_eq!(
            (length, chunked),
            (Some(seen.said.len().to_string()), None),
            "{what} on {front:?}: a body of known length is sent with its Content-Length, \
             not chunked"
        );
        answers.push(seen);
    }
    assert_eq!(shop.shop.runs(), 1);
    answers
}
