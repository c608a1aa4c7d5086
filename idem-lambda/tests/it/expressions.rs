//! JMESPath expressions as Powertools writes them, and configuration errors at build time.

use std::io::Write;

use base64::Engine;
use idem_core::Idempotency;
use idem_lambda::{EventPath, IdempotentHandler};
use idem_stores::memory::MemoryStore;
use serde_json::{json, Value};

fn select(expression: &str, event: Value) -> Result<Value, idem_lambda::ExpressionError> {
    EventPath::parse(expression).unwrap().select(&event)
}

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn powertools_json_reads_a_json_body() {
    let event = json!({"body": "{\"order\": {\"id\": 7, \"lines\": [\"a\", \"b\"]}}"});
    assert_eq!(
        select("powertools_json(body).order.id", event.clone()).unwrap(),
        json!(7)
    );
    assert_eq!(
        select("[powertools_json(body).order.id, headers.missing]", event).unwrap(),
        json!([7, null])
    );
    let error = select("powertools_json(body)", json!({"body": "id=7"})).unwrap_err();
    assert!(
        error.message.starts_with(
            "the event does not hold what the expression reads: \
             powertools_json: the text it reads is not JSON ("
        ),
        "{error}"
    );
    assert!(
        !error.message.contains("Parse error") && !error.message.contains('^'),
        "nothing says the expression is wrong: {error}"
    );
    assert_eq!(
        select("powertools_json(body)", json!({})).unwrap(),
        Value::Null
    );
}

#[test]
fn powertools_base64_and_base64_gzip_decode_text() {
    let encoded = base64(b"{\"id\": \"o-1\"}");
    let event = json!({"data": encoded});
    assert_eq!(
        select("powertools_json(powertools_base64(data)).id", event).unwrap(),
        json!("o-1")
    );

    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(b"{\"logEvents\": [{\"id\": \"e-9\"}]}")
        .unwrap();
    let event = json!({"awslogs": {"data": base64(&gzip.finish().unwrap())}});
    let path = "powertools_json(powertools_base64_gzip(awslogs.data)).logEvents[0].id";
    assert_eq!(select(path, event).unwrap(), json!("e-9"));

    let error = select("powertools_base64(data)", json!({"data": "***"})).unwrap_err();
    assert!(error.message.contains("not base64"), "{error}");
    let error = select(
        "powertools_base64_gzip(data)",
        json!({"data": base64(b"plain")}),
    )
    .unwrap_err();
    assert!(error.message.contains("not gzip"), "{error}");
    let error = select(
        "powertools_base64(data)",
        json!({"data": base64(&[0xff, 0xfe])}),
    )
    .unwrap_err();
    assert!(error.message.contains("not UTF-8"), "{error}");
    let error = select("powertools_base64(data)", json!({"data": 42})).unwrap_err();
    assert!(error.message.contains("expects type"), "{error}");
}

/// `powertools_json` builds only the fields the expression after it reads, and finds in them
/// all that the whole document would give: the same answer, or an error for both.
#[test]
fn powertools_json_read_for_some_fields_finds_what_the_whole_document_gives() {
    let documents = [
        json!({
            "customer": "c-1",
            "order_id": "o-1",
            "lines": [{"sku": "s-1"}, {"kind": "gift"}],
            "n": 3,
            "nested": {"order_id": "inner"},
        }),
        json!([{"order_id": "o-2"}, 1, [2]]),
        json!("text"),
        json!(7),
        json!(null),
        json!({}),
        json!([]),
    ];
    let readers = [
        "order_id",
        "nested.order_id",
        "[customer, order_id]",
        "{c: customer, o: order_id}",
        "lines[0]",
        "lines[*].sku",
        "lines[?sku].sku",
        "lines[].sku",
        "customer || order_id",
        "customer && n",
        "!order_id",
        "n > `2`",
        "length(lines)",
        "to_string(n)",
        "not_null(order_id, customer)",
        "*",
        "[0]",
        "[*].order_id",
        "@",
        "keys(@)",
        "length(@)",
        "sort_by(lines, &sku)",
        "order_id | [customer]",
        "`1`",
    ];
    let select = |expression: &str, event: Value| {
        EventPath::parse(expression).and_then(|path| path.select(&event))
    };
    for document in &documents {
        let event = json!({"body": document.to_string(), "doc": document});
        for reader in readers {
            let parsed = select(&format!("powertools_json(body) | {reader}"), event.clone());
            let held = select(&format!("doc | {reader}"), event.clone());
            match (parsed, held) {
                (Ok(parsed), Ok(held)) => assert_eq!(parsed, held, "`{reader}` over {document}"),
                (Err(_), Err(_)) => {}
                other => panic!("`{reader}` over {document}: {other:?}"),
            }
            let dotted = select(&format!("powertools_json(body).{reader}"), event.clone());
            let held = select(&format!("doc.{reader}"), event.clone());
            match (dotted, held) {
                (Ok(dotted), Ok(held)) => assert_eq!(dotted, held, "`.{reader}` over {document}"),
                (Err(_), Err(_)) => {}
                other => panic!("`.{reader}` over {document}: {other:?}"),
            }
        }
    }
    // Skipped, the rest of a body is still read as JSON: text that is not is refused.
    let error = select(
        "powertools_json(body).order_id",
        json!({"body": "{\"order_id\": 1, \"rest\": [1,}"}),
    )
    .unwrap_err();
    assert!(error.message.contains("not JSON"), "{error}");
}

/// A small event that inflates without bound (a gzip bomb) is refused at the bound, not
/// decoded into memory.
#[test]
fn powertools_base64_gzip_stops_at_its_bound() {
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..=idem_lambda::MAX_GZIP_INFLATED_BYTES / zeros.len() {
        gzip.write_all(&zeros).unwrap();
    }
    let compressed = gzip.finish().unwrap();
    assert!(compressed.len() < 200_000, "{} bytes", compressed.len());
    let event = json!({"data": base64(&compressed)});
    let error = select("powertools_base64_gzip(data)", event).unwrap_err();
    assert!(
        error.message.contains("decompresses to more than"),
        "{error}"
    );
}

/// The budget is one for the whole evaluation: every record's data counts, however many
/// calls decode it.
#[test]
fn what_the_functions_decode_counts_against_one_budget_per_evaluation() {
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gzip.write_all(&vec![b' '; 4 * 1024 * 1024]).unwrap();
    let record = json!({"data": base64(&gzip.finish().unwrap())});
    let path = "Records[*].powertools_base64_gzip(data)";
    let one = select(path, json!({"Records": [record.clone()]})).unwrap();
    assert_eq!(one[0].as_str().unwrap().len(), 4 * 1024 * 1024);
    let records = vec![record.clone(); idem_lambda::MAX_DECODED_BYTES / (4 * 1024 * 1024)];
    let error = select(path, json!({"Records": records})).unwrap_err();
    assert!(error.message.contains("MAX_DECODED_BYTES"), "{error}");
    // Each evaluation has a budget of its own.
    let again = select(path, json!({"Records": [record.clone(), record]})).unwrap();
    assert_eq!(again.as_array().unwrap().len(), 2);
}

#[test]
fn an_invalid_expression_is_refused_with_where_it_breaks() {
    let error = EventPath::parse("powertools_json(body).[").unwrap_err();
    assert_eq!(error.expression, "powertools_json(body).[");
    for unknown in [
        "no_such_function(body)",
        "powertools_json(body).[id, powertool_json(body)]",
        "items[?length(powertools_jsn(@)) > `0`]",
    ] {
        let error = EventPath::parse(unknown).unwrap_err();
        assert!(error.message.contains("no function `"), "{error}");
    }

    let idem = Idempotency::new(MemoryStore::new());
    let built = IdempotentHandler::builder(idem.clone())
        .event_key("body.[")
        .try_build(());
    assert!(built.is_err());
    let unkeyed = IdempotentHandler::builder(idem).try_build(());
    let Err(error) = unkeyed else {
        panic!("a handler needs an event_key")
    };
    assert!(error.message.contains("event_key"), "{error}");
}

#[test]
#[should_panic(expected = "idem_lambda::IdempotentHandler: JMESPath expression `body.[`")]
fn build_panics_at_cold_start_on_an_invalid_expression() {
    let idem = Idempotency::new(MemoryStore::new());
    let _ = IdempotentHandler::builder(idem)
        .event_key("body.[")
        .build(());
}

#[test]
#[should_panic(expected = "idem_lambda::sqs::BatchProcessor: JMESPath expression")]
fn a_batch_processor_panics_at_cold_start_on_an_invalid_expression() {
    let idem = Idempotency::new(MemoryStore::new());
    let _ = idem_lambda::sqs::BatchProcessor::new(idem).event_key("[[");
}

/// On an HTTP event (one whose `requestContext` shows its front end), header names match
/// whatever their case, in `headers` and `multiValueHeaders`; a header spelt two ways with
/// different values is refused; another event's fields are matched exactly, as JMESPath does,
/// a Lambda destination's record's too, although it has a `requestContext`.
#[test]
fn header_names_match_whatever_their_case_on_http_events() {
    let http = |headers: Value| {
        json!({
            "headers": headers,
            "multiValueHeaders": {"x-request-tag": ["t-1", "t-2"]},
            "requestContext": {"requestId": "r", "http": {"method": "POST"}},
        })
    };
    let key = "headers.\"Idempotency-Key\"";
    assert_eq!(
        select(key, http(json!({"idempotency-key": "k-1"}))).unwrap(),
        json!("k-1")
    );
    assert_eq!(
        select(
            key,
            http(json!({"IDEMPOTENCY-KEY": "k-1", "Idempotency-Key": "k-2"}))
        )
        .unwrap(),
        json!("k-2"),
        "the name as written wins"
    );
    assert_eq!(
        select(
            "[headers.idempotency_key, multiValueHeaders.\"X-Request-Tag\"[1]]",
            http(json!({"Idempotency_Key": "k-3"}))
        )
        .unwrap(),
        json!(["k-3", "t-2"])
    );
    let error = select(
        key,
        http(json!({"idempotency-key": "k-1", "IDEMPOTENCY-KEY": "k-2"})),
    )
    .unwrap_err();
    assert!(error.message.contains("with different values"), "{error}");
    assert_eq!(
        select(key, json!({"headers": {"idempotency-key": "k-1"}})).unwrap(),
        Value::Null,
        "not an HTTP event"
    );
    let destination = json!({
        "headers": {"idempotency-key": "k-1"},
        "requestContext": {
            "requestId": "r",
            "functionArn": "arn:aws:lambda:eu-west-1:1:function:orders:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 3,
        },
    });
    assert_eq!(
        select(key, destination).unwrap(),
        Value::Null,
        "a destination's record is not an HTTP event"
    );
}
