//! The errors' unit tests: statuses, retryability and messages.

use super::*;

#[test]
fn every_error_maps_to_its_http_status() {
    let key = || "k".to_string();
    let cases = [
        (
            Error::InProgress {
                key: key(),
                retry_after: Duration::from_secs(3),
            },
            409,
            true,
        ),
        (Error::LeaseLost { key: key() }, 500, false),
        (Error::Aborted { key: key() }, 500, false),
        (Error::Mismatch { key: key() }, 422, false),
        (Error::InvalidKey("too long".into()), 400, false),
        (
            Error::QuotaExceeded {
                key: key(),
                reason: "100 records kept".into(),
                retry_after: Duration::from_secs(60),
            },
            429,
            true,
        ),
        (
            Error::StoreFull {
                key: key(),
                reason: "10000 records kept by every scope".into(),
                retry_after: Duration::from_secs(60),
            },
            503,
            true,
        ),
        (
            Error::Store {
                key: key(),
                source: Box::new(Message("down".into())),
            },
            503,
            true,
        ),
        (Error::NotInstalled, 500, false),
        (
            Error::DuplicateStep {
                key: key(),
                step: "charge".into(),
            },
            500,
            false,
        ),
        (
            Error::Codec(Box::new(Message("bad json".into()))),
            500,
            false,
        ),
        (
            Error::CorruptRecord {
                key: key(),
                reason: "garbage".into(),
            },
            500,
            false,
        ),
    ];
    for (error, status, retryable) in cases {
        assert_eq!(error.http_status(), status, "{error}");
        assert_eq!(error.is_retryable(), retryable, "{error}");
    }
}

#[test]
fn store_errors_become_caller_errors_with_the_key() {
    assert!(matches!(
        StoreError::LeaseLost.into_error("k"),
        Error::LeaseLost { key } if key == "k"
    ));
    assert!(matches!(
        StoreError::Corrupt("no fingerprint".into()).into_error("k"),
        Error::CorruptRecord { key, reason } if key == "k" && reason == "no fingerprint"
    ));
    let backend = StoreError::backend(Message("connection refused".into())).into_error("k");
    assert!(matches!(&backend, Error::Store { key, .. } if key == "k"));
    assert_eq!(
        backend.to_string(),
        "idempotency key `k` could not be checked: the idempotency store is unavailable; \
         nothing ran, retry later"
    );
}

#[test]
fn a_rejected_request_is_not_retryable() {
    let rejected = StoreError::rejected(Message("item too large".into())).into_error("k");
    assert!(matches!(&rejected, Error::Rejected { key, .. } if key == "k"));
    assert_eq!(rejected.http_status(), 500);
    assert!(!rejected.is_retryable());
}

#[test]
fn every_failure_after_the_run_is_not_recorded_and_not_retryable() {
    let causes = [
        StoreError::backend(Message("down".into())).into_error("k"),
        StoreError::rejected(Message("too large".into())).into_error("k"),
        StoreError::LeaseLost.into_error("k"),
        StoreError::Corrupt("garbage".into()).into_error("k"),
        Error::codec(Message("bad json".into())),
    ];
    for cause in causes {
        let before = cause.to_string();
        let after = cause.after_run("k");
        assert!(after.ran_without_record(), "{after}");
        assert!(!after.is_retryable(), "{after}");
        assert_eq!(after.http_status(), 500);
        let source = std::error::Error::source(&after).expect("the cause is the source");
        assert_eq!(source.to_string(), before);
        assert!(
            !after.to_string().contains(&before),
            "the cause is not repeated"
        );
    }
    let twice = StoreError::LeaseLost
        .into_error("k")
        .after_run("k")
        .after_run("k");
    assert!(
        matches!(twice, Error::NotRecorded { cause, .. } if matches!(*cause, Error::LeaseLost { .. }))
    );
}

/// Walks `error`'s chain as `anyhow`'s `{:#}` prints it.
fn chain(error: &dyn StdError) -> Vec<String> {
    let mut messages = vec![error.to_string()];
    let mut next = error.source();
    while let Some(cause) = next {
        messages.push(cause.to_string());
        next = cause.source();
    }
    messages
}

#[test]
fn a_cause_is_either_in_the_message_or_the_source_never_both() {
    let cause = || Message("connection refused".into());
    let errors = [
        StoreError::backend(cause()).into_error("k"),
        StoreError::rejected(cause()).into_error("k"),
        Error::codec(cause()),
        StoreError::backend(cause()).into_error("k").after_run("k"),
    ];
    for error in errors {
        let chain = chain(&error);
        let mentions = chain
            .iter()
            .filter(|message| message.contains("connection refused"))
            .count();
        assert_eq!(mentions, 1, "{chain:?}");
    }
}

#[test]
fn not_installed_says_what_to_do() {
    assert!(Error::NotInstalled
        .to_string()
        .contains("idem_core::install"));
}
