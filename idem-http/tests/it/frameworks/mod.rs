//! One table of cases, run against every front end (the tower layer in an axum app, the
//! actix-web middleware...), each on a real server on loopback with a real client: each case
//! asserts the contract on every front end, and what they answered must be the same, so that a
//! difference between front ends fails a test.

mod cases;
mod fronts;
mod shop;

use fronts::FRONTS;

/// Runs `case` on every front end and compares what each answered with the first's.
macro_rules! on_every_front {
    ($($case:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $case() {
            let (first, others) = FRONTS.split_first().unwrap();
            let expected = cases::$case(*first).await;
            for front in others.iter().filter(|front| front.available()) {
                let seen = cases::$case(*front).await;
                assert_eq!(expected, seen, "{first:?} (left) and {front:?} (right) differ");
            }
        }
    )*};
}

on_every_front!(
    a_duplicate_is_replayed,
    a_duplicate_in_flight_gets_409_with_retry_after,
    a_changed_body_gets_422,
    a_json_retry_replays_by_its_bytes_or_its_value,
    a_keyed_request_without_a_principal_gets_400,
    principals_from_request_extensions_keep_their_keys_apart,
    principals_read_by_the_applications_closure_keep_their_keys_apart,
    two_clients_with_one_key_get_a_run_each,
    a_client_over_its_quota_gets_429,
    a_stream_reaches_its_client_while_the_handler_produces,
    a_client_that_disconnects_leaves_its_key_handled_once,
    compression_outside_the_layer_encodes_each_replay_anew,
    a_status_not_stored_releases_the_key,
    a_body_over_the_limit_gets_413_before_anything_runs,
    a_handler_that_panics_keeps_its_key_held,
    the_handler_runs_inside_the_engines_call,
    a_step_before_a_502_runs_once_and_binds_the_key_to_its_request,
    a_keyed_grpc_request_that_is_not_one_message_is_refused,
    a_service_error_after_the_handler_began_holds_its_key,
    a_replay_and_a_first_answer_of_known_length_carry_content_length,
);
