//! The handler's and the batch processor's scenarios on the DynamoDB store, against
//! moto_server: where Powertools keeps its records.

use idem_test_servers::dynamodb::TestDynamo;
use idem_tests::harness::Test;

use crate::scenarios::{self, Subject};

macro_rules! on_dynamodb {
    ($($module:ident::$scenario:ident),* $(,)?) => {
        $(
            async fn $scenario() {
                let Some(dynamo) = TestDynamo::start().await else {
                    return;
                };
                scenarios::$module::$scenario(Subject::new(dynamo.store.clone())).await;
            }
        )*
        /// The scenarios on DynamoDB, each named as a module's test is.
        pub fn tests() -> Vec<Test> {
            vec![$(Test::asynchronous(
                concat!("dynamodb::", stringify!($scenario)),
                || Box::pin($scenario()),
            )),*]
        }
    };
}

on_dynamodb!(
    handler::a_retry_in_a_new_envelope_replays,
    handler::a_changed_payload_under_the_same_key_is_refused,
    handler::a_duplicate_in_flight_is_told_in_progress,
    handler::a_timed_out_invocation_is_taken_over_after_its_deadline,
    handler::a_deadline_already_past_keeps_the_renewed_lease,
    handler::a_deadline_far_ahead_holds_the_key_no_longer_than_lambda_can_run,
    handler::a_typed_event_is_keyed_as_serde_json_writes_it,
    handler::an_event_without_a_key_is_refused_unless_allowed,
    handler::a_key_with_a_missing_part_is_no_key_unless_allowed,
    handler::a_response_hook_reshapes_replays_only,
    handler::an_answer_too_large_to_keep_is_never_in_progress,
    handler::a_failed_invocation_runs_again,
    handler::keys_keep_their_type_and_their_exact_value,
    handler::numbers_count_by_value_in_keys_and_validation,
    principal::another_principal_with_the_same_key_runs_its_own_call,
    principal::a_keyed_http_event_without_a_principal_is_refused,
    principal::a_quota_counts_per_principal,
    principal::the_documented_header_key_reads_typed_requests,
    sqs::a_duplicate_in_the_batch_runs_once,
    sqs::only_failures_are_reported_and_redelivery_runs_only_them,
    sqs::a_fifo_batch_stops_at_the_first_failure,
    sqs::different_keys_run_concurrently_and_one_key_in_order,
    sqs::messages_without_keys_or_with_changed_payloads_fail,
    sqs::a_message_held_by_another_invocation_is_reported,
    sqs::a_panicking_message_fails_alone,
    sqs::a_named_tenant_scopes_a_message_key,
);
