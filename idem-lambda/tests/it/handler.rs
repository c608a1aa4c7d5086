//! The idempotent handler on the memory store.

use crate::scenarios::{self, Subject};
use idem_stores::memory::MemoryStore;

macro_rules! on_memory {
    ($module:ident: $($scenario:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $scenario() {
            let store = std::sync::Arc::new(MemoryStore::new());
            scenarios::$module::$scenario(Subject::new(store)).await;
        }
    )*};
}

on_memory!(
    principal:
    another_principal_with_the_same_key_runs_its_own_call,
    a_keyed_http_event_without_a_principal_is_refused,
    the_shared_space_runs_and_replays_as_before,
    a_quota_counts_per_principal,
    a_principal_function_and_a_secret_scope_keys,
    the_documented_header_key_reads_typed_requests,
);

on_memory!(
    handler:
    a_retry_in_a_new_envelope_replays,
    a_changed_payload_under_the_same_key_is_refused,
    a_duplicate_in_flight_is_told_in_progress,
    a_timed_out_invocation_is_taken_over_after_its_deadline,
    a_deadline_already_past_keeps_the_renewed_lease,
    a_deadline_far_ahead_holds_the_key_no_longer_than_lambda_can_run,
    a_typed_event_is_keyed_as_serde_json_writes_it,
    an_event_without_a_key_is_refused_unless_allowed,
    a_key_with_a_missing_part_is_no_key_unless_allowed,
    a_key_that_lost_a_part_on_the_way_is_no_key_unless_allowed,
    a_response_hook_reshapes_replays_only,
    a_body_that_is_not_json_is_refused,
    a_failed_invocation_runs_again,
    keys_keep_their_type_and_their_exact_value,
    numbers_count_by_value_in_keys_and_validation,
    the_name_comes_from_the_context_unless_given,
);

/// A store that refuses every reservation, as DynamoDB does a role without `PutItem`.
struct Denied(idem_conformance::ReferenceStore);

#[async_trait::async_trait]
impl idem_conformance::Interceptor for Denied {
    fn inner(&self) -> &dyn idem_core::store::Store {
        &self.0
    }

    async fn before(
        &self,
        _: idem_conformance::Operation,
        _: &idem_core::Key,
    ) -> Result<(), idem_core::StoreError> {
        Err(idem_core::StoreError::backend(
            "AccessDeniedException: not authorized to perform dynamodb:PutItem",
        ))
    }
}

/// A store's failure reaches the log with the backend's own words, which say what to fix.
#[tokio::test]
async fn a_store_failure_says_what_the_backend_said() {
    let store = idem_conformance::Intercepted(Denied(idem_conformance::ReferenceStore::new()));
    let subject = Subject::new(std::sync::Arc::new(store));
    let mut handler = idem_lambda::IdempotentHandler::builder(subject.idem.clone())
        .event_key("order_id")
        .build(lambda_runtime::service_fn(
            |_: lambda_runtime::LambdaEvent<serde_json::Value>| async {
                Ok::<_, lambda_runtime::Error>(())
            },
        ));
    let event = lambda_runtime::LambdaEvent::new(
        serde_json::json!({"order_id": "o-1"}),
        subject.context("r1"),
    );
    let answer = lambda_runtime::Service::call(&mut handler, event).await;
    let diagnostic = lambda_runtime::Diagnostic::from(answer.unwrap_err());
    assert_eq!(diagnostic.error_type, "IdempotencyPersistenceLayerError");
    assert!(
        diagnostic
            .error_message
            .contains("not authorized to perform dynamodb:PutItem"),
        "{}",
        diagnostic.error_message
    );
}
