//! The idempotent handler on the memory store.

mod scenarios;

use idem_stores::memory::MemoryStore;
use scenarios::Subject;

macro_rules! on_memory {
    ($($scenario:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $scenario() {
            let store = std::sync::Arc::new(MemoryStore::new());
            scenarios::handler::$scenario(Subject::new(store)).await;
        }
    )*};
}

on_memory!(
    a_retry_in_a_new_envelope_replays,
    a_changed_payload_under_the_same_key_is_refused,
    a_duplicate_in_flight_is_told_in_progress,
    a_timed_out_invocation_is_taken_over_after_its_deadline,
    a_deadline_already_past_keeps_the_renewed_lease,
    an_event_without_a_key_is_refused_unless_allowed,
    a_body_that_is_not_json_is_refused,
    a_failed_invocation_runs_again,
    keys_keep_their_type_and_their_exact_value,
    the_name_comes_from_the_context_unless_given,
);
