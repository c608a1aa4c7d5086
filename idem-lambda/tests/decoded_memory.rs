//! What Powertools' functions may build out of an event, measured by a counting global
//! allocator: a gzip bomb is refused within a bound, and a large JSON body read for one field
//! costs little more than its text. Its own binary with one test, so that nothing else
//! allocates while it measures.

use std::io::Write;
use std::time::Duration;

use base64::Engine;
use idem_core::Idempotency;
use idem_lambda::{Error, IdempotentHandler, MAX_DECODED_BYTES, MAX_GZIP_INFLATED_BYTES};
use idem_stores::memory::MemoryStore;
use idem_tests::peak::Counting;
use lambda_runtime::{service_fn, Context, LambdaEvent, Service};
use serde_json::{json, Value};

#[global_allocator]
static ALLOC: Counting = Counting::new();

const MIB: usize = 1024 * 1024;

/// The most one event may raise the process's memory by while its key is chosen.
const BOUND: usize = 64 * MIB;

/// `[0,0,…,0]`, about `bytes` long.
fn zeros(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 2);
    text.push('[');
    text.push('0');
    while text.len() + 2 < bytes {
        text.push_str(",0");
    }
    text.push(']');
    text
}

/// `text` gzip-compressed, in standard base64, as CloudWatch Logs delivers it.
fn gzip_base64(text: &str) -> String {
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gzip.write_all(text.as_bytes()).unwrap();
    base64::engine::general_purpose::STANDARD.encode(gzip.finish().unwrap())
}

/// The answer of a handler keyed by `expression` to `event` (its refusal's words), and the
/// most memory it held above what was held before.
async fn measure(name: &str, expression: &str, event: Value) -> (Result<Value, String>, usize) {
    let mut handler = IdempotentHandler::builder(Idempotency::new(MemoryStore::new()))
        .name(name)
        .event_key(expression)
        .build(service_fn(|_: LambdaEvent<Value>| async {
            Ok::<_, lambda_runtime::Error>(json!({"statusCode": 201}))
        }));
    let mut context = Context::default();
    context.request_id = "r-1".to_owned();
    context.deadline = (std::time::SystemTime::now() + Duration::from_secs(60))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let invocation = LambdaEvent::new(event, context);
    let base = ALLOC.mark();
    let answer = handler.call(invocation).await;
    let peak = ALLOC.peak_above(base);
    eprintln!("{name}: {} KiB at most", peak / 1024);
    let answer = answer.map_err(|error| match error {
        Error::Expression(error) => error.to_string(),
        other => format!("refused for another reason: {other}"),
    });
    (answer, peak)
}

#[tokio::test(flavor = "current_thread")]
async fn what_an_event_may_build_is_bounded() {
    // 84 KiB of event that inflates to 63 MiB of `[0,0,…]`.
    let bomb = json!({"data": gzip_base64(&zeros(63 * MIB))});
    assert!(bomb["data"].as_str().unwrap().len() < 100 * 1024);
    let (answer, peak) = measure(
        "gzip bomb",
        "powertools_json(powertools_base64_gzip(data)).order_id",
        bomb,
    )
    .await;
    assert!(peak < BOUND, "{} MiB", peak / MIB);
    let refusal = answer.expect_err("refused, not run");
    assert!(refusal.contains("decompresses to more than"), "{refusal}");

    // Just under the inflation bound, read whole: the values are what is refused.
    let under = json!({"data": gzip_base64(&zeros(MAX_GZIP_INFLATED_BYTES - MIB))});
    let (answer, peak) = measure(
        "gzip under its bound, read whole",
        "powertools_json(powertools_base64_gzip(data))",
        under,
    )
    .await;
    assert!(peak < BOUND, "{} MiB", peak / MIB);
    let refusal = answer.expect_err("refused, not run");
    assert!(refusal.contains("MAX_DECODED_BYTES"), "{refusal}");

    // A plain 1 MiB JSON body, read for its order_id: its text, copied once.
    let body = format!("{{\"order_id\": \"o-1\", \"lines\": {}}}", zeros(MIB));
    let (answer, peak) = measure(
        "1 MiB body read for one field",
        "powertools_json(body).order_id",
        json!({"body": body}),
    )
    .await;
    answer.expect("runs");
    assert!(peak < 2 * MIB, "{} KiB", peak / 1024);

    // The same body read whole: within the budget, and the key it makes.
    let (answer, peak) = measure(
        "1 MiB body read whole",
        "powertools_json(body)",
        json!({"body": body}),
    )
    .await;
    answer.expect("runs");
    assert!(peak < MAX_DECODED_BYTES + 16 * MIB, "{} MiB", peak / MIB);
}
