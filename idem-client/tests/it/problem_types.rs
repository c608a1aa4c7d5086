//! Every problem type the contract defines, as idem-http sends it, through the client's retry
//! table. Guards the seam between idem-http and idem-client: the types are enumerated from
//! idem-protocol, the one place both take them from, so a new type the client has no rule
//! for, or a type it no longer recognises, fails here.

use crate::support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::routing::post;
use axum::Router;
use idem_client::Unscoped;
use idem_protocol::problem::ProblemType;

/// What the client does with an answer of one problem type.
#[derive(Debug, PartialEq, Eq)]
enum Treated {
    /// Sent again with the same key, until the attempts run out.
    Retried,
    /// Handed to the caller after one attempt.
    Final,
    /// Turned into an [`Unscoped`] error after one attempt.
    RefusedUnscoped,
}

fn expected(row: ProblemType) -> Treated {
    match row {
        // Nothing ran, and waiting may change that.
        ProblemType::InProgress | ProblemType::StoreUnavailable => Treated::Retried,
        // A 500 the server let go of the key for: it expects the retry.
        ProblemType::Failed | ProblemType::Misconfigured | ProblemType::ScopeMissing => {
            Treated::Retried
        }
        // It may have taken effect: never resent blindly.
        ProblemType::NotRecorded | ProblemType::ResponseNotKept => Treated::Final,
        // A quota, or a store full, with no Retry-After frees up later than the client waits.
        ProblemType::QuotaExceeded | ProblemType::StoreFull => Treated::Final,
        ProblemType::KeyReused
        | ProblemType::KeyMissing
        | ProblemType::KeyInvalid
        | ProblemType::BodyTooLarge
        | ProblemType::BodyUnreadable
        | ProblemType::EncodingNotAccepted => Treated::Final,
        ProblemType::Unscoped => Treated::RefusedUnscoped,
        other => panic!("the client has no rule for {other:?}: give it one, and say it here"),
    }
}

type Hits = Arc<Mutex<HashMap<String, usize>>>;

/// Answers `POST /problem/{NAME}` with that problem type's document and status, as idem-http
/// does, counting the attempts.
async fn problem(Path(name): Path<String>, State(hits): State<Hits>) -> axum::response::Response {
    *hits.lock().unwrap().entry(name.clone()).or_default() += 1;
    let row = ProblemType::ALL
        .iter()
        .copied()
        .find(|row| row.name() == name)
        .unwrap();
    let document = serde_json::json!({
        "type": row.uri(),
        "title": row.title(),
        "status": row.status().as_u16(),
        "detail": format!("idempotency key `k` {}", row.message()),
    });
    axum::response::IntoResponse::into_response((
        StatusCode::from_u16(row.status().as_u16()).unwrap(),
        [(header::CONTENT_TYPE, idem_protocol::header::PROBLEM_JSON)],
        document.to_string(),
    ))
}

#[tokio::test]
async fn every_problem_type_is_treated_by_its_rule() {
    let hits = Hits::default();
    let app = Router::new()
        .route("/problem/{name}", post(problem))
        .with_state(hits.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let client = support::client(support::quick().max_attempts(3).build());

    for &row in ProblemType::ALL {
        let url = format!("{base}/problem/{}", row.name());
        let treated = match client.post(url).body("{}").send().await {
            Err(error) if Unscoped::of(&error).is_some() => Treated::RefusedUnscoped,
            Err(error) => panic!("{row:?}: {error}"),
            Ok(response) => {
                assert_eq!(response.status(), row.status(), "{row:?}");
                match hits.lock().unwrap()[row.name()] {
                    1 => Treated::Final,
                    3 => Treated::Retried,
                    other => panic!("{row:?}: {other} attempts"),
                }
            }
        };
        assert_eq!(treated, expected(row), "{row:?}");
        if treated == Treated::RefusedUnscoped {
            assert_eq!(hits.lock().unwrap()[row.name()], 1, "{row:?}");
        }
    }
}
