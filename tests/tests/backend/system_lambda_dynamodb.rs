//! Seam: idem-lambda ↔ the DynamoDB store ↔ the `idem` command.
//!
//! An `IdempotentHandler` on a DynamoDB table (moto) runs API Gateway deliveries, one of them
//! retried in a new envelope; then the `idem` command, as a process, reads the same table: `list`,
//! `get` and `stats` show the handler's records as completed under its name, and a record
//! `forget` deletes is run again by the next delivery. An invocation that hangs holds its key
//! until its deadline; `idem` shows it running and `release` frees it for the redelivery. A key
//! taken from event data holds whatever text the event carried: `idem` must print it so that
//! no terminal acts on it, and find the record by the key its `--json` gives.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::system::command::Idem;
use crate::system::within;
use idem_core::Idempotency;
use idem_lambda::IdempotentHandler;
use idem_test_servers::dynamodb::TestDynamo;
use lambda_runtime::{service_fn, Context, LambdaEvent, Service};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Semaphore};

/// An API Gateway delivery of an order, as request `request_id`, with a minute left to run.
fn delivery(order_id: &str, amount: u64, request_id: &str) -> LambdaEvent<Value> {
    let body = json!({"order_id": order_id, "amount": amount}).to_string();
    let mut context = Context::default();
    context.request_id = request_id.to_owned();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    context.deadline = (now + Duration::from_secs(60)).as_millis() as u64;
    LambdaEvent::new(json!({"body": body}), context)
}

async fn lambda_records_are_listed_read_counted_and_forgotten_by_idem() {
    let Some(dynamo) = TestDynamo::start().await else {
        return;
    };
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let mut handler = IdempotentHandler::builder(Idempotency::from_arc(dynamo.store.clone()))
        .name("orders")
        .event_key("powertools_json(body).order_id")
        .payload_validation("powertools_json(body).amount")
        .build(service_fn(move |event: LambdaEvent<Value>| {
            let counted = counted.clone();
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok::<_, lambda_runtime::Error>(
                    json!({"statusCode": 201, "body": event.context.request_id}),
                )
            }
        }));

    let first = handler.call(delivery("o-1", 100, "req-1")).await.unwrap();
    let retry = handler.call(delivery("o-1", 100, "req-2")).await.unwrap();
    handler.call(delivery("o-2", 250, "req-3")).await.unwrap();
    assert_eq!(retry, first, "the retry replays req-1's response");
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    let idem = Idem::dynamodb(dynamo.table(), dynamo.moto.endpoint());
    let records = idem.list().await;
    assert_eq!(records.len(), 2, "{records:#?}");
    for record in &records {
        assert_eq!(record["function"], "orders", "{record:#}");
        assert_eq!(record["state"], "completed", "{record:#}");
        assert_eq!(record["outcome"], "ok", "{record:#}");
    }
    let keys: Vec<&str> = records
        .iter()
        .filter_map(|record| record["key"].as_str())
        .filter(|key| key.contains("o-1"))
        .collect();
    assert_eq!(keys.len(), 1, "{records:#?}");
    let key = keys[0].to_owned();

    let got = idem.json(&["get", &key]).await;
    assert_eq!(
        (&got["key"], &got["state"]),
        (&json!(key), &json!("completed"))
    );
    assert!(got["stored_bytes"].as_u64().unwrap() > 0, "{got:#}");

    let stats = idem.json(&["stats"]).await;
    assert_eq!(stats["total"], 2, "{stats:#}");
    assert_eq!(stats["by_state"], json!({"completed": 2}), "{stats:#}");
    assert_eq!(stats["functions"][0]["function"], "orders", "{stats:#}");
    assert_eq!(stats["functions"][0]["total"], 2, "{stats:#}");

    // Forgotten by the operator, the order is new to the handler: the next delivery runs it.
    idem.run(&["forget", &key, "--yes"]).await.exits(0);
    idem.run(&["get", &key]).await.exits(3);
    let again = handler.call(delivery("o-1", 100, "req-4")).await.unwrap();
    assert_eq!(again["body"], "req-4");
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(idem.list().await.len(), 2);
}

async fn a_hung_invocation_is_shown_running_and_released_by_idem_for_the_redelivery() {
    let Some(dynamo) = TestDynamo::start().await else {
        return;
    };
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(Semaphore::new(0));
    let (started, mut first_started) = mpsc::unbounded_channel();
    let (counted, held) = (runs.clone(), gate.clone());
    let handler = IdempotentHandler::builder(Idempotency::from_arc(dynamo.store.clone()))
        .name("orders")
        .event_key("powertools_json(body).order_id")
        .build(service_fn(move |event: LambdaEvent<Value>| {
            let (counted, held, started) = (counted.clone(), held.clone(), started.clone());
            async move {
                if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                    started.send(()).unwrap();
                    held.acquire().await.unwrap().forget();
                }
                Ok::<_, lambda_runtime::Error>(json!({"body": event.context.request_id}))
            }
        }));
    let first = delivery("o-7", 100, "req-1");
    let deadline = first.context.deadline;
    let hung = tokio::spawn({
        let mut handler = handler.clone();
        async move { handler.call(first).await }
    });
    within("the first invocation", first_started.recv()).await;

    let idem = Idem::dynamodb(dynamo.table(), dynamo.moto.endpoint());
    let running = idem.json(&["list", "--state", "in-progress"]).await;
    let records = running.as_array().unwrap();
    assert_eq!(records.len(), 1, "{running:#}");
    assert_eq!(
        (&records[0]["function"], &records[0]["state"]),
        (&json!("orders"), &json!("running")),
        "{running:#}"
    );
    let key = records[0]["key"].as_str().unwrap().to_owned();
    // The reservation ends with the invocation, as the handler set it and the store kept it.
    let lease_until = unix_millis(records[0]["lease_until"].as_str().unwrap());
    assert!(
        (deadline..deadline + 1_000).contains(&lease_until),
        "lease until {lease_until} ms, the invocation's deadline {deadline} ms: {running:#}"
    );

    // Held, the key refuses the redelivery; released by the operator, the redelivery runs.
    let refused = handler.clone().call(delivery("o-7", 100, "req-2")).await;
    let refused = refused.expect_err("the key is held");
    assert_eq!(
        refused.error_type(),
        Some("IdempotencyAlreadyInProgressError"),
        "{refused}"
    );
    idem.run(&["release", &key, "--yes"]).await.exits(0);
    let redelivered = handler.clone().call(delivery("o-7", 100, "req-3")).await;
    assert_eq!(redelivered.unwrap()["body"], "req-3");

    // The hung invocation ends: its response is not the one kept.
    gate.add_permits(1);
    let late = within("the hung invocation", hung).await.unwrap();
    assert!(
        matches!(
            late,
            Err(idem_lambda::Error::Idempotency(
                idem_core::Error::NotRecorded { .. }
            ))
        ),
        "it ran, and its response was not recorded: {late:?}"
    );
    let replay = handler.clone().call(delivery("o-7", 100, "req-4")).await;
    assert_eq!(replay.unwrap()["body"], "req-3");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let got = idem.json(&["get", &key]).await;
    assert_eq!(got["state"], "completed", "{got:#}");
}

/// Whether `text` holds a character a terminal would act on rather than show: an escape
/// sequence's ESC, a bell, a carriage return... (newlines and tabs are idem's own layout).
fn obeyed(text: &str) -> bool {
    text.chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
}

async fn keys_from_event_data_are_printed_harmlessly_and_found_again() {
    let Some(dynamo) = TestDynamo::start().await else {
        return;
    };
    let mut handler = IdempotentHandler::builder(Idempotency::from_arc(dynamo.store.clone()))
        .name("orders")
        .event_key("powertools_json(body).order_id")
        .build(service_fn(|event: LambdaEvent<Value>| async move {
            Ok::<_, lambda_runtime::Error>(json!({"body": event.context.request_id}))
        }));
    // An order id from a request body: anyone's text, a terminal's escape sequences included
    // (this one clears the screen and sets the window's title).
    let hostile = "o-1\u{1b}[2J\u{1b}]0;pwned\u{7}\r";
    handler.call(delivery(hostile, 100, "req-1")).await.unwrap();

    let idem = Idem::dynamodb(dynamo.table(), dynamo.moto.endpoint());
    let records = idem.list().await;
    assert_eq!(records.len(), 1, "{records:#?}");
    let key = records[0]["key"].as_str().unwrap().to_owned();
    assert!(key.contains(hostile), "JSON keeps the key exactly: {key:?}");
    // The key as `--json` gives it names the record.
    assert_eq!(idem.json(&["get", &key]).await["state"], "completed");

    let missing = format!("{key}-2");
    let mut obeying = Vec::new();
    for (args, code) in [
        (vec!["list", "--all"], 0),
        (vec!["get", key.as_str()], 0),
        (vec!["stats"], 0),
        (vec!["get", missing.as_str()], 3),
    ] {
        let run = idem.run(&args).await;
        run.exits(code);
        if obeyed(&run.printed()) {
            obeying.push(format!(
                "`idem {}` prints {:?}",
                args.join(" "),
                run.printed()
            ));
        }
    }
    assert!(obeying.is_empty(), "{obeying:#?}");
}

/// Milliseconds since the Unix epoch of a time `idem` prints, `2026-12-03T09:38:16.191Z`.
fn unix_millis(rfc3339: &str) -> u64 {
    let field = |range: std::ops::Range<usize>| rfc3339[range].parse::<i64>().unwrap();
    let (year, month, day) = (field(0..4), field(5..7), field(8..10));
    let (hour, minute, second, milli) =
        (field(11..13), field(14..16), field(17..19), field(20..23));
    // Days from the civil date (Howard Hinnant's algorithm).
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    let seconds = ((days * 24 + hour) * 60 + minute) * 60 + second;
    u64::try_from(seconds * 1_000 + milli).unwrap()
}

idem_tests::module_tests! {
    async lambda_records_are_listed_read_counted_and_forgotten_by_idem,
    async a_hung_invocation_is_shown_running_and_released_by_idem_for_the_redelivery,
    async keys_from_event_data_are_printed_harmlessly_and_found_again,
}
