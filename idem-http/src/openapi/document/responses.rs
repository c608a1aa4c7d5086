//! The layer's problem answers as documented responses, one per status.

use super::utoipa::openapi::content::{Content, ContentBuilder};
use super::utoipa::openapi::example::ExampleBuilder;
use super::utoipa::openapi::header::{Header, HeaderBuilder};
use super::utoipa::openapi::schema::{ObjectBuilder, Ref, Type};
use super::utoipa::openapi::{RefOr, Response, ResponseBuilder};
use http::header::RETRY_AFTER;
use http::StatusCode;

use super::compat;
use super::replayed_header::replayed_header;
use crate::openapi::answers::{Answer, RetryAfter};
use crate::openapi::header_case::title_case;
use crate::openapi::PROBLEM_SCHEMA;
use crate::response::problem::{Problem, ProblemType, Subject};
use crate::response::stored::IDEMPOTENT_REPLAYED;

/// The key the examples speak of: the IETF draft's.
const EXAMPLE_KEY: &str = "8e03978e-40d5-43e8-bc93-6894a57f9324";

/// The response for each status among `answers` (sorted by status), with every answer of that
/// status in its description and examples.
pub(crate) fn problem_responses(answers: &[Answer]) -> Vec<(StatusCode, Response)> {
    answers
        .chunk_by(|a, b| a.status == b.status)
        .map(|same_status| (same_status[0].status, response(same_status)))
        .collect()
}

/// Whether `response` is one of the layer's answers that [`problem_responses`] makes: its
/// problem document content refers to the [`PROBLEM_SCHEMA`] component.
pub(crate) fn is_problem_response(response: &Response) -> bool {
    let ours = RefOr::Ref(Ref::from_schema_name(PROBLEM_SCHEMA));
    response
        .content
        .get(idem_protocol::header::PROBLEM_JSON)
        .and_then(compat::content)
        .is_some_and(|content| content.schema.as_ref() == Some(&ours))
}

/// The response with status `answers[0].status`, for all of `answers`.
fn response(answers: &[Answer]) -> Response {
    let cases: Vec<String> = answers
        .iter()
        .map(|answer| {
            format!(
                "- `{}` ({}): the idempotency key {}.",
                answer.problem.name(),
                answer.problem.title(),
                answer.problem.message()
            )
        })
        .collect();
    let mut response = ResponseBuilder::new()
        .description(format!(
            "The idempotency layer's answer, an RFC 9457 problem document whose `type` is \
             the case's URI; nothing ran unless it says so:\n{}",
            cases.join("\n")
        ))
        .content(idem_protocol::header::PROBLEM_JSON, content(answers));
    if let Some(header) = retry_after_header(answers) {
        response = response.header(title_case(&RETRY_AFTER), header);
    }
    if answers.iter().any(|answer| answer.replayed) {
        response = response.header(title_case(&IDEMPOTENT_REPLAYED), replayed_header());
    }
    response.build()
}

/// The problem document schema, with an example of each answer, as the layer writes it.
fn content(answers: &[Answer]) -> Content {
    let examples = answers.iter().map(|answer| {
        let example = serde_json::to_value(example_problem(answer)).expect("a problem serialises");
        let summary = answer.problem.title();
        let example = ExampleBuilder::new().summary(summary).value(Some(example));
        (answer.problem.name(), example)
    });
    ContentBuilder::new()
        .schema(Some(Ref::from_schema_name(PROBLEM_SCHEMA)))
        .examples_from_iter(examples)
        .build()
}

/// The problem the layer answers with, about the example key.
fn example_problem(answer: &Answer) -> Problem {
    let subject = match answer.problem {
        ProblemType::KeyMissing => Subject::Unnamed,
        _ => Subject::Key(EXAMPLE_KEY),
    };
    let problem = Problem::about(answer.problem, subject, "").with_status(answer.status);
    match answer.problem {
        ProblemType::ResponseNotKept => problem.with_handled_status(StatusCode::CREATED.as_u16()),
        _ => problem,
    }
}

/// The `Retry-After` header of the answers among `answers` that send it, if any does.
fn retry_after_header(answers: &[Answer]) -> Option<Header> {
    let sent: Vec<(ProblemType, RetryAfter)> = answers
        .iter()
        .filter_map(|answer| Some((answer.problem, answer.retry_after?)))
        .collect();
    if sent.is_empty() {
        return None;
    }
    let at_most = sent
        .iter()
        .map(|(_, retry_after)| match retry_after {
            RetryAfter::AtMost(seconds) => Some(*seconds),
            RetryAfter::FromQuota => None,
        })
        .collect::<Option<Vec<u64>>>()
        .and_then(|seconds| seconds.into_iter().max());
    let cases: Vec<String> = sent
        .iter()
        .map(|(problem, retry_after)| match retry_after {
            RetryAfter::AtMost(seconds) => format!(
                "with `{}`, at most {seconds} (less when the running request's lease ends \
                 sooner)",
                problem.name()
            ),
            RetryAfter::FromQuota => format!(
                "with `{}`, when the client's quota may have room again",
                problem.name()
            ),
        })
        .collect();
    let schema = ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(1))
        .maximum(at_most);
    Some(
        compat::header_schema(HeaderBuilder::new(), schema)
            .description(Some(format!(
                "Whole seconds to wait before retrying: {}.",
                cases.join("; ")
            )))
            .build(),
    )
}
