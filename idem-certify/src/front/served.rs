//! What each server answered, attempt by attempt, as seen from outside idem-http's layer: a
//! middleware around the layer names each HTTP request (an attempt: idem-client's retries
//! are several) in a header the handler records with its call context, and writes the
//! status, the `Idempotent-Replayed` flag and the execution the answer came from (a header
//! the handler sets) once the layer answered. The checker then tells a first execution's
//! answer from a replay exactly.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue};

use crate::check::front::model::ServedAttempt;
use crate::front::lines::JsonLines;
use crate::history::now_micros;

/// The header naming an attempt, set before the layer.
pub(crate) const ATTEMPT: &str = "x-certify-attempt";
/// The header naming the execution an answer came from, set by the handler.
pub(crate) const EXECUTION: &str = "x-certify-execution";

/// A server's record of its attempts.
pub(crate) struct Served {
    name: String,
    lines: JsonLines,
    attempts: AtomicU64,
}

impl Served {
    /// Server `name`'s record, in `lines`.
    pub(crate) fn new(name: String, lines: JsonLines) -> Arc<Self> {
        Arc::new(Served {
            name,
            lines,
            attempts: AtomicU64::new(0),
        })
    }

    /// A new attempt's id, unique in the run.
    pub(crate) fn next(&self) -> String {
        let number = self.attempts.fetch_add(1, Ordering::Relaxed);
        format!("{}#{number}", self.name)
    }

    /// Names a new attempt in the headers of its request, before the layer: its id.
    pub(crate) fn name(&self, headers: &mut HeaderMap) -> String {
        let attempt = self.next();
        let value = HeaderValue::from_str(&attempt).expect("an attempt's id is ASCII");
        headers.insert(ATTEMPT, value);
        attempt
    }

    /// Writes what attempt `attempt` was answered: `status`, with `headers`.
    pub(crate) fn answered(&self, attempt: String, status: u16, headers: &HeaderMap) {
        self.record(attempt, status, |name| header_text(headers, name));
    }

    /// Writes what attempt `attempt` was answered, `header` reading the answer's headers.
    pub(crate) fn record(
        &self,
        attempt: String,
        status: u16,
        header: impl Fn(&str) -> Option<String>,
    ) {
        let replayed = header(idem_client::IDEMPOTENT_REPLAYED.as_str())
            .is_some_and(|value| value.eq_ignore_ascii_case("true"));
        self.lines.write(&ServedAttempt {
            attempt,
            status,
            replayed,
            execution: header(EXECUTION),
            t: now_micros(),
        });
    }
}

/// A header's value in `headers`, as text.
pub(crate) fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    Some(headers.get(name)?.to_str().ok()?.to_owned())
}

/// The middleware around the tower layer.
pub(crate) async fn tower(
    axum::extract::State(served): axum::extract::State<Arc<Served>>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let attempt = served.name(request.headers_mut());
    let response = next.run(request).await;
    served.answered(attempt, response.status().as_u16(), response.headers());
    response
}
