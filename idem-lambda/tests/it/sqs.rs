//! The SQS batch processor on the memory store.

use crate::scenarios::{self, Subject};
use idem_stores::memory::MemoryStore;

macro_rules! on_memory {
    ($($scenario:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $scenario() {
            let store = std::sync::Arc::new(MemoryStore::new());
            scenarios::sqs::$scenario(Subject::new(store)).await;
        }
    )*};
}

on_memory!(
    a_duplicate_in_the_batch_runs_once,
    only_failures_are_reported_and_redelivery_runs_only_them,
    a_fifo_batch_stops_at_the_first_failure,
    different_keys_run_concurrently_and_one_key_in_order,
    messages_without_keys_or_with_changed_payloads_fail,
    a_message_held_by_another_invocation_is_reported,
    a_panicking_message_fails_alone,
    a_named_tenant_scopes_a_message_key,
);
