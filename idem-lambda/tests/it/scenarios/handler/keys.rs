//! What makes an event's key: a missing key or part, typed and numeric values, the function's
//! name, typed events.

use super::*;

/// An event without its key is refused as `IdempotencyKeyError` and runs nothing; with
/// `raise_on_no_idempotency_key(false)` it runs, every time, without idempotency.
pub async fn an_event_without_a_key_is_refused_unless_allowed(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let no_key = || json!({"body": "{\"amount\": 3}"});
    let null_key = || json!({"body": "{\"order_id\": null}"});
    let empty_key = json!({"body": "{\"order_id\": \"\", \"item\": \"sofa\"}"});
    let mut strict = orders(&subject).build(counting(&runs));
    for event in [no_key(), null_key(), empty_key, json!({"headers": {}})] {
        let answer = invoke(&mut strict, &subject, event, "r1").await;
        assert!(
            matches!(answer, Err(Error::KeyMissing { .. })),
            "{answer:?}"
        );
    }
    let answer = invoke(&mut strict, &subject, no_key(), "r1").await;
    let diagnostic = Diagnostic::from(answer.unwrap_err());
    assert_eq!(diagnostic.error_type, "IdempotencyKeyError");
    assert!(
        diagnostic
            .error_message
            .contains("powertools_json(body).order_id"),
        "{}",
        diagnostic.error_message
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    let mut lenient = orders(&subject)
        .raise_on_no_idempotency_key(false)
        .build(counting(&runs));
    for request in ["r2", "r3"] {
        invoke(&mut lenient, &subject, no_key(), request)
            .await
            .unwrap();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2, "no key, no idempotency");
}

/// A key of several parts with one missing is no key: without its `order_id`, `[customer,
/// order_id]` would be one key for all of the customer's orders. `allow_partial_keys` takes
/// it as Powertools does.
pub async fn a_key_with_a_missing_part_is_no_key_unless_allowed(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let order = |order_id: Value| json!({"customer": "c-1", "order_id": order_id});
    let by_customer_and_order = || {
        IdempotentHandler::builder(subject.idem.clone())
            .name("orders")
            .event_key("[customer, order_id]")
    };
    let mut strict = by_customer_and_order().build(counting(&runs));
    for missing in [Value::Null, json!("")] {
        let answer = invoke(&mut strict, &subject, order(missing), "r1").await;
        assert!(
            matches!(answer, Err(Error::KeyMissing { .. })),
            "{answer:?}"
        );
    }
    let mut by_hash = IdempotentHandler::builder(subject.idem.clone())
        .name("orders")
        .event_key("{c: customer, o: order_id}")
        .build(counting(&runs));
    let answer = invoke(&mut by_hash, &subject, order(Value::Null), "r1").await;
    assert!(
        matches!(answer, Err(Error::KeyMissing { .. })),
        "{answer:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // A body selected whole is the event's own data: its nulls are its own.
    let mut whole_body = IdempotentHandler::builder(subject.idem.clone())
        .name("bodies")
        .event_key("powertools_json(body)")
        .build(counting(&runs));
    let body = json!({"body": "{\"order_id\": 7, \"coupon\": null}"});
    invoke(&mut whole_body, &subject, body, "r0").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    invoke(&mut strict, &subject, order(json!("o-1")), "r2")
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    let mut partial = by_customer_and_order()
        .allow_partial_keys()
        .build(counting(&runs));
    for request in ["r3", "r4"] {
        invoke(&mut partial, &subject, order(Value::Null), request)
            .await
            .unwrap();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3, "the second one replays");
}

/// A key that loses a part of the event on the way is no key, whatever the expression does
/// with the part after: two orders of one customer without their `order_id` would otherwise
/// share a key, and the second would get the first one's response. A filter's choice is no
/// loss, and `allow_partial_keys` takes such keys as Powertools does.
pub async fn a_key_that_lost_a_part_on_the_way_is_no_key_unless_allowed(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    // Two orders of one customer, both without their order_id.
    let order = |amount: u64| {
        json!({
            "customer": "c-1",
            "sku": "s-1",
            "amount": amount,
            "lines": [{"sku": "s-1"}, {"kind": "gift"}],
        })
    };
    for (at, expression) in [
        "[customer, order_id][]",
        "[customer, [order_id, sku]]",
        "[customer, order_id] | [?@ != null]",
        "to_string(order_id)",
        "type(order_id)",
        "{c: customer, rest: [order_id][]}",
        "lines[*].sku",
    ]
    .into_iter()
    .enumerate()
    {
        let mut handler = IdempotentHandler::builder(subject.idem.clone())
            .name(format!("orders-{at}"))
            .event_key(expression)
            .build(counting(&runs));
        for (amount, request) in [(5, "r1"), (9, "r2")] {
            let answer = invoke(&mut handler, &subject, order(amount), request).await;
            assert!(
                matches!(answer, Err(Error::KeyMissing { .. })),
                "`{expression}`, order of {amount}: {answer:?}"
            );
        }
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran");

    // Every part there: a key, and the retry replays.
    let mut whole = IdempotentHandler::builder(subject.idem.clone())
        .name("whole")
        .event_key("[customer, [order_id, sku]][]")
        .build(counting(&runs));
    let mut complete = order(5);
    complete["order_id"] = json!("o-1");
    for request in ["r3", "r4"] {
        let done = invoke(&mut whole, &subject, complete.clone(), request)
            .await
            .unwrap();
        assert_eq!(done["body"], "r3");
    }
    // A filter chooses the lines it keys by: the gift line is left out, not lost.
    let mut filtered = IdempotentHandler::builder(subject.idem.clone())
        .name("filtered")
        .event_key("[customer, lines[?sku].sku]")
        .build(counting(&runs));
    invoke(&mut filtered, &subject, order(5), "r5")
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    let mut partial = IdempotentHandler::builder(subject.idem.clone())
        .name("partial")
        .event_key("[customer, order_id][]")
        .allow_partial_keys()
        .build(counting(&runs));
    for request in ["r6", "r7"] {
        let done = invoke(&mut partial, &subject, order(5), request)
            .await
            .unwrap();
        assert_eq!(
            done["body"], "r6",
            "taken as Powertools takes it, and replayed"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

/// Keys are typed: the number 42 and the string "42" are two keys; a list key works; a
/// number too large to compare exactly is refused rather than confused with its neighbour.
pub async fn keys_keep_their_type_and_their_exact_value(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = orders(&subject).build(counting(&runs));
    for (order_id, request) in [
        (json!(42), "r1"),
        (json!("42"), "r2"),
        (json!([1, "a"]), "r3"),
    ] {
        let done = invoke(
            &mut handler,
            &subject,
            api_event(order_id, 1, request),
            request,
        )
        .await
        .unwrap();
        assert_eq!(done["body"], request, "a key of its own");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);

    for huge in ["123456789012345678901", "123456789012345678902"] {
        let event = json!({"body": format!("{{\"order_id\": {huge}}}")});
        let answer = invoke(&mut handler, &subject, event, "r4").await;
        let Err(Error::Expression(error)) = &answer else {
            panic!("refused: {answer:?}")
        };
        assert!(error.message.contains("as a string"), "{error}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

/// Numbers count by value, in keys and in validated data: `42` and `42.0` are one key,
/// `100` and `100.0` one amount, while `101` is another amount and `"42"` another key.
pub async fn numbers_count_by_value_in_keys_and_validation(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = orders(&subject)
        .name("numbers")
        .payload_validation("powertools_json(body).amount")
        .build(counting(&runs));
    let event = |body: &str| json!({"body": body});
    let first = invoke(
        &mut handler,
        &subject,
        event(r#"{"order_id": 42, "amount": 100}"#),
        "r1",
    )
    .await
    .unwrap();
    for (body, request) in [
        (r#"{"order_id": 42.0, "amount": 100.0}"#, "r2"),
        (r#"{"order_id": 4.2e1, "amount": 1e2}"#, "r3"),
    ] {
        let replayed = invoke(&mut handler, &subject, event(body), request)
            .await
            .unwrap();
        assert_eq!(replayed, first, "{body} replays");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let changed = invoke(
        &mut handler,
        &subject,
        event(r#"{"order_id": 42.0, "amount": 101}"#),
        "r4",
    )
    .await;
    assert_eq!(error_type(changed), "IdempotencyValidationError");
    let text_key = invoke(
        &mut handler,
        &subject,
        event(r#"{"order_id": "42", "amount": 100}"#),
        "r5",
    )
    .await
    .unwrap();
    assert_eq!(
        text_key["body"], "r5",
        "the string \"42\" is a key of its own"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// The handler is keyed under the function's name from the context unless named, and one
/// with neither is refused with what to do.
pub async fn the_name_comes_from_the_context_unless_given(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut by_context = orders(&subject).build(counting(&runs));
    let mut named = orders(&subject).name("orders-fn").build(counting(&runs));
    let mut other = orders(&subject).name("refunds").build(counting(&runs));
    invoke(
        &mut by_context,
        &subject,
        api_event(json!("o-5"), 1, "r1"),
        "r1",
    )
    .await
    .unwrap();
    let same = invoke(&mut named, &subject, api_event(json!("o-5"), 1, "r2"), "r2")
        .await
        .unwrap();
    assert_eq!(same["body"], "r1", "the context's name, shared");
    let separate = invoke(&mut other, &subject, api_event(json!("o-5"), 1, "r3"), "r3")
        .await
        .unwrap();
    assert_eq!(separate["body"], "r3");

    let mut context = subject.context("r4");
    context.env_config = Arc::new(lambda_runtime::Config::default());
    let unnamed = by_context
        .call(LambdaEvent::new(api_event(json!("o-5"), 1, "r4"), context))
        .await;
    let diagnostic = Diagnostic::from(unnamed.unwrap_err());
    assert_eq!(diagnostic.error_type, "IdempotencyConfigError");
    assert!(diagnostic.error_message.contains(".name("));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// An order as a typed event, with what JMESPath's own serializer refuses and serde_json
/// writes: a map with integer keys, a 128-bit number.
#[derive(serde::Serialize, Clone)]
pub struct TypedOrder {
    order_id: String,
    lines: std::collections::HashMap<u32, String>,
    total_micros: u128,
}

/// A typed event is keyed as serde_json writes it, whatever fields it holds.
pub async fn a_typed_event_is_keyed_as_serde_json_writes_it(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = IdempotentHandler::builder(subject.idem.clone())
        .event_key("order_id")
        .build(service_fn({
            let runs = runs.clone();
            move |event: LambdaEvent<TypedOrder>| {
                let runs = runs.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, HandlerError>(event.context.request_id)
                }
            }
        }));
    let order = TypedOrder {
        order_id: "o-6".into(),
        lines: [(1, "tv".to_owned())].into(),
        total_micros: u128::MAX,
    };
    for request in ["r1", "r2"] {
        let event = LambdaEvent::new(order.clone(), subject.context(request));
        assert_eq!(handler.call(event).await.unwrap(), "r1");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
