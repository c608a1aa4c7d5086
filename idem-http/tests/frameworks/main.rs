//! One table of cases, run against the tower layer (in an axum app) and the actix-web
//! middleware, each on a real server on loopback with a real client: each case asserts the
//! contract on both, and what the two answered must be the same, so that a difference between
//! the front ends fails a test.

#[path = "../actix_server/mod.rs"]
#[macro_use]
mod actix_server;
mod cases;
mod fronts;
mod shop;

use fronts::Front;

/// Runs `case` on both front ends and compares what they answered.
macro_rules! on_both {
    ($($case:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $case() {
            let tower = cases::$case(Front::Tower).await;
            let actix = cases::$case(Front::Actix).await;
            assert_eq!(tower, actix, "the tower layer (left) and actix-web (right) differ");
        }
    )*};
}

on_both!(
    a_duplicate_is_replayed,
    a_duplicate_in_flight_gets_409_with_retry_after,
    a_changed_body_gets_422,
    a_keyed_request_without_a_principal_gets_400,
    principals_from_request_extensions_keep_their_keys_apart,
    a_client_over_its_quota_gets_429,
    a_stream_reaches_its_client_while_the_handler_produces,
    a_client_that_disconnects_leaves_its_key_handled_once,
    compression_outside_the_layer_encodes_each_replay_anew,
    a_status_not_stored_releases_the_key,
    a_body_over_the_limit_gets_413_before_anything_runs,
    a_handler_that_panics_keeps_its_key_held,
);
