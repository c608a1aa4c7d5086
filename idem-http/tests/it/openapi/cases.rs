//! The cases of the layer's contract in an OpenAPI document, on whichever utoipa the module
//! that includes them names `utoipa`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use super::utoipa::openapi::path::{HttpMethod, OperationBuilder, PathItem};
use super::utoipa::openapi::{InfoBuilder, OpenApi, OpenApiBuilder, PathsBuilder, ResponseBuilder};
use crate::support::{app, memory, send, serve, soon, Answer, Payments};
use http::Method;
use idem_core::ScopeQuota;
use idem_http::openapi::PROBLEM_SCHEMA;
use idem_http::{
    problem, IdempotencyLayer, IdempotencyLayerBuilder, MismatchStatus, DEFAULT_RETRY_AFTER,
    MAX_HEADER_KEY_LEN,
};
use oas3::spec::{
    MediaTypeExamples, ObjectOrReference, ObjectSchema, Operation, Parameter, ParameterIn,
    Response, Schema, Spec,
};

const PROBLEM_JSON: &str = "application/problem+json";

/// The document of the payments routes as their author would write it, before the contract:
/// POST and PATCH answer 201, GET 200, and PUT documents a 409 of its own.
fn routes_document() -> OpenApi {
    let answering = |status: &str, description: &str| {
        OperationBuilder::new().response(status, ResponseBuilder::new().description(description))
    };
    let mut payments = PathItem::new(HttpMethod::Post, answering("201", "The payment."));
    payments.patch = Some(answering("201", "The payment, changed.").build());
    payments.get = Some(answering("200", "The payments.").build());
    payments.put = Some(
        answering("201", "The payment.")
            .response("409", ResponseBuilder::new().description("Already paid."))
            .build(),
    );
    OpenApiBuilder::new()
        .info(InfoBuilder::new().title("Payments").version("1.0.0"))
        .paths(PathsBuilder::new().path("/payments", payments))
        .build()
}

/// The routes' document with `layer`'s contract applied, as JSON.
fn document_json(layer: &IdempotencyLayer) -> String {
    let mut openapi = routes_document();
    layer.openapi().apply(&mut openapi);
    openapi.to_json().unwrap()
}

/// The routes' document with `layer`'s contract applied, as another parser reads it.
fn document(layer: &IdempotencyLayer) -> Spec {
    let json = document_json(layer);
    let spec = oas3::from_json(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert!(spec.openapi.starts_with("3.1"), "{}", spec.openapi);
    spec
}

fn layer(
    build: impl FnOnce(IdempotencyLayerBuilder) -> IdempotencyLayerBuilder,
) -> IdempotencyLayer {
    build(IdempotencyLayer::builder(memory())).build()
}

fn operation(spec: &Spec, method: Method) -> Operation {
    let item = &spec.paths.as_ref().unwrap()["/payments"];
    let operation = match method {
        Method::GET => &item.get,
        Method::POST => &item.post,
        Method::PUT => &item.put,
        Method::PATCH => &item.patch,
        other => panic!("no {other} route"),
    };
    operation.clone().unwrap()
}

fn key_parameter(spec: &Spec, operation: &Operation) -> Option<Parameter> {
    let parameters: Vec<Parameter> = operation
        .parameters
        .iter()
        .map(|parameter| parameter.resolve(spec).unwrap())
        .filter(|parameter| parameter.name.eq_ignore_ascii_case("idempotency-key"))
        .collect();
    assert!(parameters.len() <= 1, "{parameters:?}");
    parameters.into_iter().next()
}

fn object(spec: &Spec, schema: &Schema) -> ObjectSchema {
    match schema.resolve(spec).unwrap() {
        Schema::Object(object) => match *object {
            ObjectOrReference::Object(object) => object,
            other => panic!("not resolved: {other:?}"),
        },
        Schema::Boolean(other) => panic!("a boolean schema: {other:?}"),
    }
}

fn response(spec: &Spec, operation: &Operation, status: u16) -> Option<Response> {
    let responses = operation.responses.as_ref().unwrap();
    Some(responses.get(&status.to_string())?.resolve(spec).unwrap())
}

/// The problem answer with `status`, checked for its content: the problem schema, by
/// reference.
fn problem_response(spec: &Spec, operation: &Operation, status: u16) -> Response {
    let response =
        response(spec, operation, status).unwrap_or_else(|| panic!("no {status} response"));
    let content = &response.content[PROBLEM_JSON];
    let schema = content.schema.as_ref().expect("a schema");
    let Schema::Object(schema) = schema else {
        panic!("{schema:?}")
    };
    let ObjectOrReference::Ref { ref_path, .. } = &**schema else {
        panic!("an inline schema: {schema:?}")
    };
    assert_eq!(ref_path, &format!("#/components/schemas/{PROBLEM_SCHEMA}"));
    response
}

/// The problem `type`s of the examples of a problem answer.
fn example_types(response: &Response) -> BTreeSet<String> {
    let Some(MediaTypeExamples::Examples { examples }) = &response.content[PROBLEM_JSON].examples
    else {
        panic!("no examples: {response:?}")
    };
    examples
        .values()
        .map(|example| match example {
            ObjectOrReference::Object(example) => {
                let value = example.value.as_ref().unwrap();
                value["type"].as_str().unwrap().to_owned()
            }
            other => panic!("{other:?}"),
        })
        .collect()
}

fn types(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

fn header_schema(spec: &Spec, response: &Response, name: &str) -> Option<ObjectSchema> {
    let header = response.headers.get(name)?.resolve(spec).unwrap();
    Some(object(spec, header.schema.as_ref().unwrap()))
}

fn number(value: u64) -> Option<serde_json::Number> {
    Some(value.into())
}

#[test]
fn a_protected_operation_documents_the_key_header_and_the_problem_answers() {
    let spec = document(&layer(|layer| {
        layer.quota(ScopeQuota::new().max_records(10))
    }));
    let post = operation(&spec, Method::POST);

    let key = key_parameter(&spec, &post).expect("the Idempotency-Key parameter");
    assert_eq!(key.name, "Idempotency-Key");
    assert_eq!(key.location, ParameterIn::Header);
    assert_ne!(
        key.required,
        Some(true),
        "not required unless the layer says so"
    );
    assert!(key.description.unwrap().contains("retry"));
    let schema = object(&spec, key.schema.as_ref().unwrap());
    assert_eq!(schema.max_length, Some(MAX_HEADER_KEY_LEN as u64));
    assert_eq!(schema.min_length, Some(1));
    assert_eq!(
        schema.pattern.as_deref(),
        Some(idem_protocol::key::bare_pattern().as_str()),
        "`order 42` or `café-1` must not validate and then get a 400"
    );
    assert_eq!(
        schema.schema_type,
        Some(oas3::spec::SchemaTypeSet::Single(
            oas3::spec::SchemaType::String
        ))
    );

    let bad_key = problem_response(&spec, &post, 400);
    assert_eq!(
        example_types(&bad_key),
        types(&[
            problem::KEY_INVALID,
            problem::BODY_UNREADABLE,
            problem::UNSCOPED
        ])
    );
    let in_progress = problem_response(&spec, &post, 409);
    assert_eq!(example_types(&in_progress), types(&[problem::IN_PROGRESS]));
    let retry_after = header_schema(&spec, &in_progress, "Retry-After").expect("Retry-After");
    assert_eq!(retry_after.minimum, number(1));
    assert_eq!(retry_after.maximum, number(DEFAULT_RETRY_AFTER.as_secs()));
    let not_kept = problem_response(&spec, &post, 410);
    assert_eq!(
        example_types(&not_kept),
        types(&[problem::RESPONSE_NOT_KEPT])
    );
    assert!(header_schema(&spec, &not_kept, "Retry-After").is_none());
    assert!(header_schema(&spec, &not_kept, "Idempotent-Replayed").is_some());
    let too_large = problem_response(&spec, &post, 413);
    assert_eq!(example_types(&too_large), types(&[problem::BODY_TOO_LARGE]));
    let reused = problem_response(&spec, &post, 422);
    assert_eq!(example_types(&reused), types(&[problem::KEY_REUSED]));
    assert!(header_schema(&spec, &reused, "Retry-After").is_none());
    let over_quota = problem_response(&spec, &post, 429);
    assert_eq!(
        example_types(&over_quota),
        types(&[problem::QUOTA_EXCEEDED])
    );
    let retry_after = header_schema(&spec, &over_quota, "Retry-After").expect("Retry-After");
    assert_eq!(retry_after.minimum, number(1));

    let created = response(&spec, &post, 201).unwrap();
    assert_eq!(created.description.as_deref(), Some("The payment."));
    let replayed = header_schema(&spec, &created, "Idempotent-Replayed").expect("on a 201");
    assert_eq!(replayed.enum_values, [serde_json::json!("true")]);

    let components = spec.components.as_ref().unwrap();
    let schema = object(&spec, &components.schemas[PROBLEM_SCHEMA]);
    for member in ["type", "title", "status", "detail"] {
        assert!(
            schema.required.iter().any(|name| name == member),
            "{member}"
        );
    }
    assert_eq!(
        schema.properties.keys().cloned().collect::<BTreeSet<_>>(),
        types(&["detail", "handled_status", "status", "title", "type"])
    );
    assert_eq!(
        object(&spec, &schema.properties["type"]).format.as_deref(),
        Some("uri")
    );
}

#[test]
fn the_examples_are_the_layers_own_problem_documents() {
    let spec = document(&IdempotencyLayer::new(memory()));
    let post = operation(&spec, Method::POST);
    let in_progress = problem_response(&spec, &post, 409);
    let Some(MediaTypeExamples::Examples { examples }) =
        &in_progress.content[PROBLEM_JSON].examples
    else {
        panic!("no examples")
    };
    let ObjectOrReference::Object(example) = &examples["IN_PROGRESS"] else {
        panic!("a reference")
    };
    let value = example.value.as_ref().unwrap();
    assert_eq!(value["type"], problem::IN_PROGRESS);
    assert_eq!(value["status"], 409);
    assert_eq!(
        value["title"],
        problem::ProblemType::InProgress.title(),
        "{value}"
    );
    assert!(value["detail"]
        .as_str()
        .unwrap()
        .contains(problem::ProblemType::InProgress.message()));
}

#[test]
fn the_key_is_required_exactly_when_the_layer_requires_it() {
    for require in [true, false] {
        let spec = document(&layer(|layer| layer.require_key(require)));
        let post = operation(&spec, Method::POST);
        let key = key_parameter(&spec, &post).unwrap();
        assert_eq!(key.required.unwrap_or(false), require);
        let missing =
            example_types(&problem_response(&spec, &post, 400)).contains(problem::KEY_MISSING);
        assert_eq!(missing, require, "the 400 for a missing key");
    }
}

#[test]
fn only_the_methods_the_layer_protects_are_changed() {
    let untouched = |spec: &Spec, method: Method| {
        let before = oas3::from_json(routes_document().to_json().unwrap()).unwrap();
        operation(spec, method.clone()) == operation(&before, method)
    };

    let spec = document(&IdempotencyLayer::new(memory()));
    assert!(untouched(&spec, Method::GET));
    assert!(untouched(&spec, Method::PUT));
    assert!(key_parameter(&spec, &operation(&spec, Method::PATCH)).is_some());

    let spec = document(&layer(|layer| layer.methods([Method::GET])));
    assert!(!untouched(&spec, Method::GET));
    let get = operation(&spec, Method::GET);
    assert!(key_parameter(&spec, &get).is_some());
    let listed = response(&spec, &get, 200).unwrap();
    assert!(header_schema(&spec, &listed, "Idempotent-Replayed").is_some());
    assert!(untouched(&spec, Method::POST));
    assert!(untouched(&spec, Method::PATCH));
}

#[test]
fn the_key_reused_answer_has_the_layers_mismatch_status() {
    let spec = document(&layer(|layer| {
        layer.mismatch_status(MismatchStatus::BadRequest)
    }));
    let post = operation(&spec, Method::POST);
    assert!(response(&spec, &post, 422).is_none());
    let bad_request = example_types(&problem_response(&spec, &post, 400));
    assert!(bad_request.contains(problem::KEY_REUSED), "{bad_request:?}");
    assert!(
        bad_request.contains(problem::KEY_INVALID),
        "{bad_request:?}"
    );

    let spec = document(&layer(|layer| {
        layer.mismatch_status(MismatchStatus::Conflict)
    }));
    let post = operation(&spec, Method::POST);
    assert!(response(&spec, &post, 422).is_none());
    let conflict = problem_response(&spec, &post, 409);
    assert_eq!(
        example_types(&conflict),
        types(&[problem::IN_PROGRESS, problem::KEY_REUSED])
    );
    assert!(header_schema(&spec, &conflict, "Retry-After").is_some());
}

#[test]
fn the_layers_settings_shape_the_answers() {
    let spec = document(&IdempotencyLayer::new(memory()));
    let post = operation(&spec, Method::POST);
    assert!(response(&spec, &post, 429).is_none(), "no quota, no 429");

    let spec = document(&layer(|layer| {
        layer
            .retry_after(Duration::from_millis(7_500))
            .unscoped(idem_http::Unscoped::PassedThrough)
    }));
    let post = operation(&spec, Method::POST);
    let in_progress = problem_response(&spec, &post, 409);
    let retry_after = header_schema(&spec, &in_progress, "Retry-After").unwrap();
    assert_eq!(retry_after.maximum, number(8), "whole seconds, rounded up");
    let bad_request = example_types(&problem_response(&spec, &post, 400));
    assert!(!bad_request.contains(problem::UNSCOPED), "{bad_request:?}");

    let spec = document(&layer(|layer| {
        layer.methods([Method::PUT]).store_when(|_| true)
    }));
    let put = operation(&spec, Method::PUT);
    let own_conflict = response(&spec, &put, 409).unwrap();
    assert!(
        header_schema(&spec, &own_conflict, "Idempotent-Replayed").is_some(),
        "a 409 the layer stores can be replayed"
    );
}

#[test]
fn what_the_operation_documents_is_kept_and_applying_twice_changes_nothing() {
    let layer = layer(|layer| layer.methods([Method::PUT]));
    let spec = document(&layer);
    let put = operation(&spec, Method::PUT);
    let own_conflict = response(&spec, &put, 409).unwrap();
    assert_eq!(own_conflict.description.as_deref(), Some("Already paid."));
    assert!(own_conflict.content.is_empty());
    assert!(own_conflict.headers.is_empty(), "a 409 is not stored");
    problem_response(&spec, &put, 410);

    let mut twice = routes_document();
    layer.openapi().apply(&mut twice);
    layer.openapi().apply(&mut twice);
    assert_eq!(twice.to_json().unwrap(), document_json(&layer));
}

/// A real answer of the layer, checked against the document: its status is documented with
/// the problem schema, its `type` among that status's examples, its members are the schema's
/// (and the required ones are there), and its headers are the documented ones.
fn assert_documented(spec: &Spec, answer: &Answer) {
    let post = operation(spec, Method::POST);
    let documented = problem_response(spec, &post, answer.status);
    let problem = answer.json();
    assert!(
        example_types(&documented).contains(problem["type"].as_str().unwrap()),
        "{problem}"
    );
    let schema = object(
        spec,
        &spec.components.as_ref().unwrap().schemas[PROBLEM_SCHEMA],
    );
    let members = problem.as_object().unwrap();
    for member in members.keys() {
        assert!(schema.properties.contains_key(member), "{member}");
    }
    for member in &schema.required {
        assert!(members.contains_key(member), "{member}");
    }
    for header in ["retry-after", "idempotent-replayed"] {
        if answer.header(header).is_some() {
            let documented = documented
                .headers
                .keys()
                .any(|name| name.eq_ignore_ascii_case(header));
            assert!(documented, "{header} on a {}", answer.status);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_layers_real_answers_are_the_documented_ones() {
    let (payments, mut started) = Payments::held();
    let layer = layer(|layer| layer.require_key(true));
    let spec = document(&layer);
    let server = Arc::new(serve(app(layer, payments.clone())).await);

    let missing = send(server.post("/payments", None, "{}")).await;
    missing.assert_problem(400, problem::KEY_MISSING, None);
    assert_documented(&spec, &missing);

    let first = tokio::spawn(send(server.post("/payments", Some("pay-1"), "{}")));
    soon(started.recv()).await.unwrap();
    let duplicate = send(server.post("/payments", Some("pay-1"), "{}")).await;
    duplicate.assert_problem(409, problem::IN_PROGRESS, Some("pay-1"));
    assert_documented(&spec, &duplicate);
    let in_progress = problem_response(&spec, &operation(&spec, Method::POST), 409);
    let most = header_schema(&spec, &in_progress, "Retry-After")
        .unwrap()
        .maximum;
    let most = most.and_then(|most| most.as_u64()).unwrap();
    let waited: u64 = duplicate.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=most).contains(&waited), "{waited} {most}");

    payments.release();
    assert_eq!(soon(first).await.unwrap().status, 201);
    let replay = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert!(replay.replayed());
    let created = response(&spec, &operation(&spec, Method::POST), replay.status).unwrap();
    assert!(header_schema(&spec, &created, "Idempotent-Replayed").is_some());

    let reused = send(server.post("/payments", Some("pay-1"), r#"{"other":1}"#)).await;
    reused.assert_problem(422, problem::KEY_REUSED, Some("pay-1"));
    assert_documented(&spec, &reused);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_not_kept_is_documented_with_its_members_and_headers() {
    let payments = Arc::new(Payments::default());
    *payments.streamed_len.lock().unwrap() = Some(2048);
    let layer = layer(|layer| layer.max_response_body(1024));
    let spec = document(&layer);
    let server = serve(app(layer, payments)).await;

    assert_eq!(
        send(server.post("/payments", Some("pay-1"), "{}"))
            .await
            .status,
        201
    );
    let retry = send(server.post("/payments", Some("pay-1"), "{}")).await;
    retry.assert_problem(410, problem::RESPONSE_NOT_KEPT, Some("pay-1"));
    assert!(retry.json()["handled_status"].is_number());
    assert!(retry.replayed());
    assert_documented(&spec, &retry);
}
