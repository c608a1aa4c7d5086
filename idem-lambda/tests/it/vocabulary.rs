//! One error vocabulary across the front ends: for each engine error, the attribute's error
//! text, the HTTP layer's problem document and the Lambda handler's `errorType` and message
//! come from the same row of `idem_protocol::problem`. Guards the seam between idem-core,
//! idem-http and idem-lambda: a front end that words a case its own way, or maps it to
//! another status or `errorType`, fails here.

use std::time::Duration;

use http_body_util::BodyExt;
use idem_core::Error;
use idem_protocol::problem::ProblemType;
use lambda_runtime::Diagnostic;

/// An engine error of every kind a front end answers, with the row it stands for.
fn cases() -> Vec<(Error, ProblemType)> {
    let key = || "order-42".to_owned();
    let down = || Box::<dyn std::error::Error + Send + Sync>::from("connection refused");
    vec![
        (
            Error::InProgress {
                key: key(),
                retry_after: Duration::from_secs(3),
            },
            ProblemType::InProgress,
        ),
        (Error::Mismatch { key: key() }, ProblemType::KeyReused),
        (
            Error::Store {
                key: key(),
                source: down(),
            },
            ProblemType::StoreUnavailable,
        ),
        (
            Error::QuotaExceeded {
                key: key(),
                reason: "100 records kept".into(),
                retry_after: Duration::from_secs(60),
            },
            ProblemType::QuotaExceeded,
        ),
        (
            Error::StoreFull {
                key: key(),
                reason: "100000 records in all".into(),
                retry_after: Duration::from_secs(60),
            },
            ProblemType::StoreFull,
        ),
        (
            Error::NotRecorded {
                key: key(),
                cause: Box::new(Error::LeaseLost { key: key() }),
            },
            ProblemType::NotRecorded,
        ),
        (
            Error::InvalidKey("too long".into()),
            ProblemType::KeyInvalid,
        ),
        (Error::NotInstalled, ProblemType::Misconfigured),
        (
            Error::CorruptRecord {
                key: key(),
                reason: "garbage".into(),
            },
            ProblemType::Failed,
        ),
    ]
}

/// Whether the attribute's error words the case with its row: every case but those whose
/// own text says more than the row can (a corrupt record's reason, two functions' sites, an
/// abort, a lost lease). The layer's problem detail uses the row's words for every case.
fn worded(error: &Error) -> bool {
    !matches!(
        error,
        Error::NotInstalled
            | Error::DuplicateName { .. }
            | Error::CorruptRecord { .. }
            | Error::Codec(_)
            | Error::Aborted { .. }
            | Error::LeaseLost { .. }
    )
}

#[test]
fn the_attribute_words_each_case_with_its_row() {
    for (error, row) in cases() {
        assert_eq!(error.problem_type(), row, "{error}");
        assert_eq!(error.http_status(), row.status().as_u16(), "{error}");
        if worded(&error) {
            assert!(error.to_string().contains(row.message()), "{error}");
        }
    }
}

#[tokio::test]
async fn the_layer_answers_each_case_with_its_row() {
    for (error, row) in cases() {
        let response = idem_http::problem::response_for(&error);
        assert_eq!(response.status(), row.status(), "{error}");
        assert_eq!(
            response.headers()["content-type"],
            idem_protocol::header::PROBLEM_JSON
        );
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(problem["type"], row.uri(), "{error}");
        assert_eq!(problem["title"], row.title(), "{error}");
        assert_eq!(problem["status"], row.status().as_u16(), "{error}");
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.contains(row.message()), "{detail}");
    }
}

#[test]
fn the_lambda_handler_reports_each_case_with_its_row() {
    for (error, row) in cases() {
        let shown = error.to_string();
        let words = worded(&error);
        let lambda: idem_lambda::Error<std::io::Error> = error.into();
        assert_eq!(lambda.problem_type(), Some(row));
        let diagnostic = Diagnostic::from(lambda);
        assert_eq!(diagnostic.error_type, row.lambda_error_type(), "{shown}");
        if words {
            assert!(
                diagnostic.error_message.contains(row.message()),
                "{}",
                diagnostic.error_message
            );
        }
    }
}

#[test]
fn a_call_that_ran_unrecorded_is_never_reported_as_in_progress() {
    let not_recorded = Error::NotRecorded {
        key: "k".into(),
        cause: Box::new(Error::LeaseLost { key: "k".into() }),
    };
    let lambda: idem_lambda::Error<std::io::Error> = not_recorded.into();
    let diagnostic = Diagnostic::from(lambda);
    assert_eq!(diagnostic.error_type, "IdempotencyNotRecordedError");
    assert_ne!(
        diagnostic.error_type,
        ProblemType::InProgress.lambda_error_type()
    );
    assert!(!diagnostic
        .error_message
        .contains(ProblemType::InProgress.message()));
    assert!(!diagnostic.error_message.contains("retry in"));
    assert!(diagnostic
        .error_message
        .contains(ProblemType::NotRecorded.message()));
}
