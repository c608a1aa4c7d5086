//! What an invocation answers: a response hook on replays, an answer too large to keep, a body
//! that is not JSON, a failure that releases its key.

use super::*;

/// A response hook sees every replay, and only replays, and what it returns is the answer.
pub async fn a_response_hook_reshapes_replays_only(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut handler = orders(&subject)
        .name("orders")
        .response_hook({
            let seen = seen.clone();
            move |mut response: Value, replay: &idem_lambda::Replay<'_>| {
                let key = replay.key().as_str().to_owned();
                seen.lock()
                    .unwrap()
                    .push((key, replay.request_id().to_owned()));
                response["headers"] = json!({"x-idempotent-replay": replay.request_id()});
                response
            }
        })
        .build(counting(&runs));
    let event = || json!({"body": "{\"order_id\": \"o-7\"}"});

    let first = invoke(&mut handler, &subject, event(), "r1").await.unwrap();
    assert_eq!(
        first["headers"],
        Value::Null,
        "the first response is the handler's own"
    );
    let retry = invoke(&mut handler, &subject, event(), "r2").await.unwrap();
    assert_eq!(retry["body"], "r1", "the stored response");
    assert_eq!(retry["headers"]["x-idempotent-replay"], "r2");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].0.contains("o-7"), "{seen:?}");
    assert_eq!(seen[0].1, "r2");
}

/// An answer the store cannot keep (over DynamoDB's 400 KB item limit): the first invocation
/// is told its outcome was not recorded, and so is every retry after it, never "in progress",
/// and the handler does not run again.
pub async fn an_answer_too_large_to_keep_is_never_in_progress(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = orders(&subject).name("orders").build(service_fn({
        let runs = runs.clone();
        move |_: LambdaEvent<Value>| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, HandlerError>(json!({"statusCode": 200, "body": "x".repeat(500_000)}))
            }
        }
    }));
    let event = || json!({"body": "{\"order_id\": \"o-big\"}"});
    for request in ["r1", "r2", "r3"] {
        let answer = invoke(&mut handler, &subject, event(), request).await;
        assert_eq!(
            error_type(answer),
            "IdempotencyNotRecordedError",
            "{request}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A body that is not JSON under `powertools_json` gives no key: refused, nothing runs.
pub async fn a_body_that_is_not_json_is_refused(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = orders(&subject)
        .raise_on_no_idempotency_key(false)
        .build(counting(&runs));
    let answer = invoke(
        &mut handler,
        &subject,
        json!({"body": "order_id=o-1"}),
        "r1",
    )
    .await;
    assert!(matches!(answer, Err(Error::Expression(_))), "{answer:?}");
    let answer = invoke(&mut handler, &subject, json!({"body": "{"}), "r1").await;
    assert_eq!(error_type(answer), "IdempotencyKeyError");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// A failed handler releases its key: the retry runs again, and its success is replayed.
pub async fn a_failed_invocation_runs_again(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = orders(&subject).build(service_fn({
        let runs = runs.clone();
        move |event: LambdaEvent<Value>| {
            let runs = runs.clone();
            async move {
                if runs.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err(HandlerError::from("the payment provider timed out"));
                }
                Ok(json!({"body": event.context.request_id}))
            }
        }
    }));
    let failed = invoke(
        &mut handler,
        &subject,
        api_event(json!("o-3"), 1, "r1"),
        "r1",
    )
    .await;
    let Err(Error::Handler(error)) = failed else {
        panic!("the handler's own error: {failed:?}")
    };
    assert_eq!(error.to_string(), "the payment provider timed out");
    let retried = invoke(
        &mut handler,
        &subject,
        api_event(json!("o-3"), 1, "r2"),
        "r2",
    )
    .await
    .unwrap();
    let replayed = invoke(
        &mut handler,
        &subject,
        api_event(json!("o-3"), 1, "r3"),
        "r3",
    )
    .await
    .unwrap();
    assert_eq!(
        (retried["body"].as_str(), replayed),
        (Some("r2"), retried.clone())
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}
