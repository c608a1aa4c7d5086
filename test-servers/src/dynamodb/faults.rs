//! An interceptor that replaces real responses with error responses, for the faults a real
//! server cannot be made to produce on demand (throttling, internal errors).
//!
//! The request still reaches the real server; only the answer the client sees is replaced, as
//! when a response is lost on the way back.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::BeforeDeserializationInterceptorContextMut;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents, SharedInterceptor};
use aws_sdk_dynamodb::error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;

/// An error response DynamoDB may send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// HTTP 400 `ThrottlingException`.
    Throttling,
    /// HTTP 500 `InternalServerError`.
    InternalServerError,
}

impl Fault {
    fn status(self) -> u16 {
        match self {
            Fault::Throttling => 400,
            Fault::InternalServerError => 500,
        }
    }

    fn error_type(self) -> &'static str {
        match self {
            Fault::Throttling => "ThrottlingException",
            Fault::InternalServerError => "InternalServerError",
        }
    }

    fn message(self) -> &'static str {
        match self {
            Fault::Throttling => "Rate of requests exceeds the allowed throughput.",
            Fault::InternalServerError => "Internal server error",
        }
    }
}

/// A planned fault: the operation it waits for (`None` for any) and the response it sends.
type Planned = (Option<String>, Fault);

/// Replaces the responses to chosen requests. Cheap to clone; clones share the plan.
#[derive(Clone, Debug, Default)]
pub struct FaultInjector {
    plan: Arc<Mutex<VecDeque<Planned>>>,
}

impl FaultInjector {
    /// An injector that replaces nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The interceptor to install on a client.
    pub fn interceptor(&self) -> SharedInterceptor {
        SharedInterceptor::new(self.clone())
    }

    /// Replaces the response to the next request of `operation` (`PutItem`, ...; `None` for
    /// any) with `fault`. Planned faults are used up in order.
    pub fn next(&self, operation: Option<&str>, fault: Fault) {
        self.plan
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push_back((operation.map(str::to_owned), fault));
    }

    /// Drops the planned faults not used yet.
    pub fn clear(&self) {
        self.plan
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
    }

    /// How many planned faults were not used yet.
    pub fn pending(&self) -> usize {
        self.plan
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .len()
    }
}

impl Intercept for FaultInjector {
    fn name(&self) -> &'static str {
        "FaultInjector"
    }

    fn modify_before_deserialization(
        &self,
        context: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let operation = cfg
            .load::<Metadata>()
            .map(|metadata| metadata.name().to_owned());
        let fault = {
            let mut plan = self
                .plan
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            match plan.front() {
                Some((wanted, _)) if wanted.is_none() || *wanted == operation => {
                    plan.pop_front().map(|(_, fault)| fault)
                }
                _ => None,
            }
        };
        if let Some(fault) = fault {
            let body = format!(
                r#"{{"__type":"com.amazonaws.dynamodb.v20120810#{}","message":"{}"}}"#,
                fault.error_type(),
                fault.message()
            );
            let response = context.response_mut();
            *response.status_mut() = fault.status().try_into()?;
            let headers = response.headers_mut();
            headers.remove("x-amz-crc32");
            headers.remove("x-amzn-errortype");
            headers.insert("content-type", "application/x-amz-json-1.0");
            headers.insert("content-length", body.len().to_string());
            *response.body_mut() = body.into();
        }
        Ok(())
    }
}
