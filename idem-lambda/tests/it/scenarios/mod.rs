//! Scenarios every store runs: the handler's and the batch processor's behaviour on a store
//! given by the test file.

#![allow(dead_code, unused_imports)]

pub mod handler;
pub mod principal;
pub mod sqs;

use std::sync::Arc;
use std::time::Duration;

use idem_core::{store::Store, Clock, Idempotency, ManualClock};
use lambda_runtime::{Config, Context};

/// A handle on the store under test, with a clock the scenario moves.
pub struct Subject {
    pub idem: Idempotency,
    pub clock: ManualClock,
}

impl Subject {
    pub fn new(store: Arc<dyn Store>) -> Self {
        let clock = ManualClock::new();
        Subject {
            idem: Idempotency::from_arc(store).with_clock(clock.clone()),
            clock,
        }
    }

    /// An invocation's context for the function `orders-fn`, with a minute left.
    pub fn context(&self, request_id: &str) -> Context {
        self.context_with(request_id, Duration::from_secs(60))
    }

    /// An invocation's context with `left` until its deadline.
    pub fn context_with(&self, request_id: &str, left: Duration) -> Context {
        let mut context = Context::default();
        context.request_id = request_id.to_owned();
        context.deadline = (self.clock.now() + left).as_millis();
        context.env_config = Arc::new(Config {
            function_name: "orders-fn".to_owned(),
            ..Config::default()
        });
        context
    }
}
