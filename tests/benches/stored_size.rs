//! What an answer of the HTTP layer takes in each store, against its own size.
//!
//! ```text
//! cargo bench -p idem-tests --features http,redis,postgres,dynamodb --bench stored_size
//! ```
//!
//! Sends one request for each kind of answer (JSON, control characters, non-ASCII text, random
//! bytes; 100,000 bytes each, under DynamoDB's 400 KB item limit) through `IdempotencyLayer`
//! over real HTTP on loopback, once per store, each on a server started here. Prints, as a
//! multiple of the answer's size:
//!
//! - the outcome every store is handed (the memory store keeps exactly this): the layer's
//!   binary frame, the body as it is after the status and headers and their lengths, so a
//!   little over 1× for every kind;
//! - the same body escaped as JSON text, as the layer stored it before its JSON form put bodies
//!   that escape badly in base64, and before the frame replaced that form;
//! - Redis: `MEMORY USAGE` of the record's key;
//! - PostgreSQL: `pg_column_size` of the record's row (after TOAST compression), and the
//!   body column's `octet_length` (before it);
//! - DynamoDB: the item's size as DynamoDB counts it (attribute names plus values).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use idem_core::{
    store::{Outcome, Record, Store},
    Idempotency, Key,
};
use idem_http::{IdempotencyLayer, Unscoped};
use idem_stores::memory::MemoryStore;
use idem_stores::redis::client as redis;
use idem_test_servers::dynamodb::TestDynamo;
use idem_test_servers::postgres::TestPg;
use idem_test_servers::redis::target::RedisTarget;
use tokio::net::TcpListener;

const ANSWER_BYTES: usize = 100_000;
const KINDS: [&str; 4] = ["json", "control", "non-ascii", "binary"];

/// The answer of `kind`, exactly [`ANSWER_BYTES`] long, and its content type.
fn answer(kind: &str) -> (&'static str, Vec<u8>) {
    match kind {
        "json" => {
            let filler = "a".repeat(ANSWER_BYTES - r#"{"data":""}"#.len());
            (
                "application/json",
                format!(r#"{{"data":"{filler}"}}"#).into_bytes(),
            )
        }
        "control" => ("text/plain", vec![1; ANSWER_BYTES]),
        "non-ascii" => (
            "text/plain; charset=utf-8",
            "é".repeat(ANSWER_BYTES / 2).into_bytes(),
        ),
        _ => {
            // xorshift: incompressible, and not UTF-8.
            let mut state = 0x9e37_79b9_7f4a_7c15_u64;
            let bytes = (0..ANSWER_BYTES)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 24) as u8
                })
                .collect();
            ("application/octet-stream", bytes)
        }
    }
}

async fn respond(Path(kind): Path<String>) -> impl IntoResponse {
    let (content_type, body) = answer(&kind);
    (
        StatusCode::CREATED,
        [(header::CONTENT_TYPE, content_type)],
        body,
    )
}

/// Serves the answers behind the layer on `idem`; its URL.
async fn serve(idem: Idempotency) -> String {
    let layer = IdempotencyLayer::builder(idem)
        .unscoped(Unscoped::Shared)
        .build();
    let app = Router::new()
        .route("/answers/{kind}", post(respond))
        .layer(layer);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// Stores the answer of `kind` through `idem` and returns the key of its record.
async fn store_answer(idem: &Idempotency, url: &str, kind: &str) -> Key {
    let response = reqwest::Client::new()
        .post(format!("{url}/answers/{kind}"))
        .header("idempotency-key", kind)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201, "{kind}");
    assert_eq!(response.bytes().await.unwrap().len(), ANSWER_BYTES);
    // The layer's records are keyed `http`, unscoped here, by the client's key.
    idem.key("http").part(kind).finish().unwrap()
}

/// The length of the outcome stored under `key`: the layer's frame.
async fn outcome_bytes(store: &dyn Store, key: &Key) -> usize {
    match store.get(key).await.unwrap() {
        Some(Record::Completed(completed)) => match completed.outcome() {
            Outcome::Ok(body) => {
                assert!(body.starts_with(b"\0iH\x01"), "the layer stores its frame");
                body.len()
            }
            other => panic!("unexpected outcome {other:?}"),
        },
        other => panic!("no completed record: {other:?}"),
    }
}

/// DynamoDB's size of an item: every attribute's name and value.
fn item_size(item: &HashMap<String, AttributeValue>) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

fn value_size(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::S(text) => text.len(),
        AttributeValue::B(bytes) => bytes.as_ref().len(),
        // Up to 38 significant digits, two per byte, plus one.
        AttributeValue::N(number) => number.trim_start_matches('-').len().div_ceil(2) + 1,
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::M(map) => 3 + map.len() + item_size(map),
        AttributeValue::L(list) => 3 + list.len() + list.iter().map(value_size).sum::<usize>(),
        _ => 0,
    }
}

#[derive(Default)]
struct Row {
    outcome: usize,
    json_text: usize,
    redis: Option<usize>,
    postgres_row: Option<usize>,
    postgres_body: Option<usize>,
    dynamodb: Option<usize>,
}

fn times(bytes: Option<usize>) -> String {
    bytes.map_or("n/a".to_owned(), |bytes| {
        format!("{bytes} ({:.2}×)", bytes as f64 / ANSWER_BYTES as f64)
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut rows: HashMap<&str, Row> = KINDS.iter().map(|kind| (*kind, Row::default())).collect();
    for kind in KINDS {
        let (_, body) = answer(kind);
        let row = rows.get_mut(kind).unwrap();
        row.json_text = match std::str::from_utf8(&body) {
            Ok(text) => serde_json::to_string(text).unwrap().len(),
            Err(_) => serde_json::to_string(&body).unwrap().len(),
        };
    }

    let memory = Idempotency::new(MemoryStore::new());
    let url = serve(memory.clone()).await;
    for kind in KINDS {
        let key = store_answer(&memory, &url, kind).await;
        rows.get_mut(kind).unwrap().outcome = outcome_bytes(&**memory.store(), &key).await;
    }

    if let Some(redis) = RedisTarget::on_owned().await {
        let idem = Idempotency::new(redis.redis_store().clone());
        let url = serve(idem.clone()).await;
        let mut conn = redis.raw().await;
        for kind in KINDS {
            let key = store_answer(&idem, &url, kind).await;
            let usage: usize = redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(redis.redis_store().redis_key(&key))
                .arg("SAMPLES")
                .arg(0)
                .query_async(&mut conn)
                .await
                .unwrap();
            rows.get_mut(kind).unwrap().redis = Some(usage);
        }
    }

    if let Some(postgres) = TestPg::start_owned().await {
        let idem = Idempotency::from_arc(postgres.store.clone());
        let url = serve(idem.clone()).await;
        for kind in KINDS {
            let key = store_answer(&idem, &url, kind).await;
            let (row_size, body_size): (i32, i32) = sqlx::query_as(&format!(
                "SELECT pg_column_size(t.*), octet_length(body) FROM {} t WHERE key = $1",
                idem_stores::postgres::DEFAULT_TABLE
            ))
            .bind(postgres.store.row_key(&key))
            .fetch_one(&postgres.pool)
            .await
            .unwrap();
            let row = rows.get_mut(kind).unwrap();
            row.postgres_row = Some(row_size as usize);
            row.postgres_body = Some(body_size as usize);
        }
    }

    if let Some(dynamo) = TestDynamo::start_owned().await {
        let idem = Idempotency::from_arc(dynamo.store.clone());
        let url = serve(idem.clone()).await;
        for kind in KINDS {
            let key = store_answer(&idem, &url, kind).await;
            let item = dynamo
                .client
                .get_item()
                .table_name(dynamo.table())
                .key(
                    dynamo.store.names().key.clone(),
                    AttributeValue::S(dynamo.store.item_key(&key)),
                )
                .consistent_read(true)
                .send()
                .await
                .unwrap()
                .item
                .expect("the record is there");
            rows.get_mut(kind).unwrap().dynamodb = Some(item_size(&item));
        }
    }

    println!("### Stored size of a {ANSWER_BYTES}-byte answer, in bytes (× the answer)\n");
    println!(
        "| answer | outcome, the frame (memory store) | body as JSON text (before) | Redis `MEMORY USAGE` | \
         PostgreSQL row (body before TOAST) | DynamoDB item |"
    );
    println!("|---|---|---|---|---|---|");
    for kind in KINDS {
        let row = &rows[kind];
        let postgres = match (row.postgres_row, row.postgres_body) {
            (Some(stored), Some(body)) => format!("{} ({body})", times(Some(stored))),
            _ => "n/a".to_owned(),
        };
        println!(
            "| {kind} | {} | {} | {} | {postgres} | {} |",
            times(Some(row.outcome)),
            times(Some(row.json_text)),
            times(row.redis),
            times(row.dynamodb),
        );
    }
}
