//! Whose key it is: the keys of HTTP events are their principal's alone, a keyed HTTP event
//! without a principal is refused unless the handler shares one key space, quotas count per
//! principal, and header names match whatever their case.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use aws_lambda_events::apigw::{ApiGatewayProxyRequest, ApiGatewayV2httpRequest};
use aws_lambda_events::http;
use idem_core::ScopeQuota;
use idem_lambda::{Error, IdempotentHandler, Unscoped};
use idem_protocol::problem::ProblemType;
use lambda_runtime::{service_fn, Diagnostic, LambdaEvent, Service};
use serde_json::{json, Value};

use super::Subject;

type HandlerError = lambda_runtime::Error;
type Answer = Result<Value, Error<HandlerError>>;

/// The key expression of the builder's documentation.
const BY_HEADER: &str = "headers.\"Idempotency-Key\"";

/// A REST API event carrying `Idempotency-Key: key`, from the principal a Lambda authorizer
/// named, or from no one (a route without an authorizer).
fn rest_event(key: &str, principal: Option<&str>) -> Value {
    let mut context = json!({"requestId": "r", "httpMethod": "POST", "apiId": "a1"});
    if let Some(principal) = principal {
        context["authorizer"] = json!({"principalId": principal});
    }
    json!({
        "httpMethod": "POST",
        "headers": {"Idempotency-Key": key, "Content-Type": "application/json"},
        "body": "{\"amount\": 5}",
        "requestContext": context,
    })
}

/// A handler keyed by the header, counting its runs and answering with the request id that
/// ran it.
fn by_header(
    builder: idem_lambda::IdempotentHandlerBuilder,
    runs: &Arc<AtomicUsize>,
) -> impl Service<LambdaEvent<Value>, Response = Value, Error = Error<HandlerError>> + Clone {
    let runs = runs.clone();
    builder
        .event_key(BY_HEADER)
        .build(service_fn(move |event: LambdaEvent<Value>| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, HandlerError>(json!({"statusCode": 201, "body": event.context.request_id}))
            }
        }))
}

async fn invoke<S>(handler: &mut S, subject: &Subject, event: Value, request_id: &str) -> Answer
where
    S: Service<LambdaEvent<Value>, Response = Value, Error = Error<HandlerError>>,
{
    handler
        .call(LambdaEvent::new(event, subject.context(request_id)))
        .await
}

/// User B sending user A's key runs its own call, not A's: A's retry replays A's answer, B's
/// gets B's.
pub async fn another_principal_with_the_same_key_runs_its_own_call(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = by_header(IdempotentHandler::builder(subject.idem.clone()), &runs);
    let alice = invoke(
        &mut handler,
        &subject,
        rest_event("k-1", Some("alice")),
        "r1",
    )
    .await
    .unwrap();
    assert_eq!(alice["body"], "r1");
    let bob = invoke(&mut handler, &subject, rest_event("k-1", Some("bob")), "r2")
        .await
        .unwrap();
    assert_eq!(bob["body"], "r2", "bob's own run, not alice's answer");
    for (principal, first) in [("alice", "r1"), ("bob", "r2")] {
        let retry = invoke(
            &mut handler,
            &subject,
            rest_event("k-1", Some(principal)),
            "r3",
        )
        .await
        .unwrap();
        assert_eq!(
            retry["body"], first,
            "{principal}'s retry replays its own answer"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// A keyed HTTP event without a principal (no authorizer, an ALB, a WebSocket or VPC Lattice
/// route) is refused, says what to do, and runs nothing; an HTTP event without a key is as
/// before (refused as keyless, or run unprotected when allowed), and a non-HTTP event's key is
/// unscoped: a direct invoke's, and a Lambda destination's record's, although it has a
/// `requestContext`.
pub async fn a_keyed_http_event_without_a_principal_is_refused(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = by_header(IdempotentHandler::builder(subject.idem.clone()), &runs);
    let alb = json!({
        "headers": {"idempotency-key": "k-1"},
        "requestContext": {"elb": {"targetGroupArn": "arn:aws:elasticloadbalancing:tg"}},
    });
    let websocket = json!({
        "headers": {"Idempotency-Key": "k-1"},
        "requestContext": {
            "routeKey": "$default",
            "eventType": "MESSAGE",
            "connectionId": "L0SM9cOFvHcCIhw=",
            "apiId": "a1",
        },
    });
    let lattice = json!({
        "version": "2.0",
        "method": "POST",
        "headers": {"idempotency-key": "k-1"},
        "requestContext": {
            "serviceArn": "arn:aws:vpc-lattice:eu-west-1:1:service/svc-1",
            "targetGroupArn": "arn:aws:vpc-lattice:eu-west-1:1:targetgroup/tg-1",
            "identity": {"type": "AWS_IAM"},
        },
    });
    let refused = [
        rest_event("k-1", None),
        rest_event("k-1", Some(" ")),
        alb,
        websocket,
        lattice,
    ];
    for event in refused {
        let answer = invoke(&mut handler, &subject, event.clone(), "r1").await;
        let Err(error @ Error::Unscoped { .. }) = answer else {
            panic!("refused without a principal: {answer:?} for {event}")
        };
        assert_eq!(error.problem_type(), Some(ProblemType::Unscoped));
        let diagnostic = Diagnostic::from(error);
        assert_eq!(diagnostic.error_type, "IdempotencyKeyError");
        for words in [
            ProblemType::Unscoped.message(),
            BY_HEADER,
            "authorizer",
            ".principal(",
            ".unscoped(Unscoped::Shared)",
        ] {
            assert!(
                diagnostic.error_message.contains(words),
                "{words}: {}",
                diagnostic.error_message
            );
        }
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran");

    let mut lenient = by_header(
        IdempotentHandler::builder(subject.idem.clone()).raise_on_no_idempotency_key(false),
        &runs,
    );
    let mut keyless = rest_event("", None);
    keyless["headers"] = json!({});
    invoke(&mut lenient, &subject, keyless, "r2").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "no key: run unprotected");

    let direct = || json!({"headers": {"Idempotency-Key": "k-9"}});
    for request in ["r3", "r4"] {
        let done = invoke(&mut handler, &subject, direct(), request)
            .await
            .unwrap();
        assert_eq!(
            done["body"], "r3",
            "a direct invoke's key is unscoped, and replays"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    let destination = || {
        json!({
            "version": "1.0",
            "timestamp": "2026-12-07T05:00:00.000Z",
            "requestContext": {
                "requestId": "e6f3a1b2",
                "functionArn": "arn:aws:lambda:eu-west-1:1:function:orders:$LATEST",
                "condition": "RetriesExhausted",
                "approximateInvokeCount": 3,
            },
            "requestPayload": {"order_id": "o-1"},
            "headers": {"Idempotency-Key": "k-10"},
        })
    };
    for request in ["r5", "r6"] {
        let done = invoke(&mut handler, &subject, destination(), request).await;
        let done = done.unwrap_or_else(|error| {
            panic!("a destination's record is not an HTTP event, and runs: {error}")
        });
        assert_eq!(done["body"], "r5", "its key is unscoped, and replays");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

/// With the shared key space chosen, HTTP events without a principal run and replay as
/// before principals were read; a principal's event keeps its own key space.
pub async fn the_shared_space_runs_and_replays_as_before(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut handler = by_header(
        IdempotentHandler::builder(subject.idem.clone()).unscoped(Unscoped::Shared),
        &runs,
    );
    let first = invoke(&mut handler, &subject, rest_event("k-1", None), "r1")
        .await
        .unwrap();
    let retry = invoke(&mut handler, &subject, rest_event("k-1", None), "r2")
        .await
        .unwrap();
    assert_eq!((first["body"].as_str(), &retry), (Some("r1"), &first));
    let scoped = invoke(
        &mut handler,
        &subject,
        rest_event("k-1", Some("carol")),
        "r3",
    )
    .await
    .unwrap();
    assert_eq!(scoped["body"], "r3", "a principal's key is its own");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// A quota counts each principal's records apart: principal A over its allowance of one is
/// refused a second key while principal B's first key runs.
pub async fn a_quota_counts_per_principal(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let idem = subject
        .idem
        .clone()
        .with_quota(ScopeQuota::new().max_records(1));
    let mut handler = by_header(IdempotentHandler::builder(idem), &runs);
    invoke(
        &mut handler,
        &subject,
        rest_event("k-1", Some("alice")),
        "r1",
    )
    .await
    .unwrap();
    let over = invoke(
        &mut handler,
        &subject,
        rest_event("k-2", Some("alice")),
        "r2",
    )
    .await;
    let diagnostic = Diagnostic::from(over.expect_err("alice is over her quota"));
    assert_eq!(diagnostic.error_type, "IdempotencyQuotaExceededError");
    let bob = invoke(&mut handler, &subject, rest_event("k-1", Some("bob")), "r3")
        .await
        .unwrap();
    assert_eq!(bob["body"], "r3", "bob's allowance is his own");
    let bob_over = invoke(&mut handler, &subject, rest_event("k-3", Some("bob")), "r4").await;
    let diagnostic = Diagnostic::from(bob_over.expect_err("bob is over his quota"));
    assert_eq!(diagnostic.error_type, "IdempotencyQuotaExceededError");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// A principal function names the principal in place of the rule's, for every event; with a
/// scope secret, the stored scope is the contract's HMAC of the principal, not the principal.
pub async fn a_principal_function_and_a_secret_scope_keys(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let secret = [7u8; 32];
    let scopes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let builder = IdempotentHandler::builder(subject.idem.clone())
        .principal(|event: &Value, _: &lambda_runtime::Context| {
            let tenant = event.pointer("/requestContext/authorizer/lambda/tenantId")?;
            Some(format!("tenant:{}", tenant.as_str()?))
        })
        .scope_secret(secret)
        .response_hook({
            let scopes = scopes.clone();
            move |response: Value, replay: &idem_lambda::Replay<'_>| {
                let scope = replay.key().scope().map(str::to_owned);
                scopes.lock().unwrap().push(scope);
                response
            }
        });
    let mut handler = by_header(builder, &runs);
    let tenant_event = |tenant: &str| {
        let mut event = rest_event("k-1", Some("the-same-user"));
        event["requestContext"]["authorizer"]["lambda"] = json!({"tenantId": tenant});
        event
    };
    for (tenant, request) in [("t-1", "r1"), ("t-2", "r2"), ("t-1", "r3")] {
        invoke(&mut handler, &subject, tenant_event(tenant), request)
            .await
            .unwrap();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2, "one run per tenant");
    let expected = idem_protocol::scope::keyed_scope(&secret, "tenant:t-1");
    assert_eq!(*scopes.lock().unwrap(), vec![Some(expected)]);

    // The function's `None` on an HTTP event is no principal, whatever the authorizer said.
    let mut event = rest_event("k-1", Some("the-same-user"));
    event["requestContext"]["authorizer"]["lambda"] = json!({});
    let answer = invoke(&mut handler, &subject, event, "r4").await;
    assert!(matches!(answer, Err(Error::Unscoped { .. })), "{answer:?}");
}

/// The documentation's `headers."Idempotency-Key"` finds the header of a typed API Gateway
/// REST request, which writes its names in lower case, whether the function takes the event
/// as JSON or typed; and of an HTTP API request, scoped by its JWT's subject.
pub async fn the_documented_header_key_reads_typed_requests(subject: Subject) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut rest = ApiGatewayProxyRequest::default();
    rest.http_method = http::Method::POST;
    rest.headers
        .insert("Idempotency-Key", http::HeaderValue::from_static("k-typed"));
    rest.body = Some("{\"amount\": 5}".to_owned());
    rest.request_context.authorizer.fields = [("principalId".to_owned(), json!("alice"))].into();
    let delivered = serde_json::to_value(&rest).unwrap();
    assert_eq!(
        delivered["headers"],
        json!({"idempotency-key": "k-typed"}),
        "the typed event lower-cases the name"
    );

    let mut as_json = by_header(IdempotentHandler::builder(subject.idem.clone()), &runs);
    let first = invoke(&mut as_json, &subject, delivered.clone(), "r1")
        .await
        .unwrap();
    assert_eq!(first["body"], "r1");

    let typed_runs = runs.clone();
    let mut typed = IdempotentHandler::builder(subject.idem.clone())
        .event_key(BY_HEADER)
        .build(service_fn(
            move |event: LambdaEvent<ApiGatewayProxyRequest>| {
                let runs = typed_runs.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, HandlerError>(
                        json!({"statusCode": 201, "body": event.context.request_id}),
                    )
                }
            },
        ));
    let replayed = typed
        .call(LambdaEvent::new(rest.clone(), subject.context("r2")))
        .await
        .unwrap();
    assert_eq!(replayed, first, "the typed event has the same key");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let mut http_api: ApiGatewayV2httpRequest = serde_json::from_value(json!({
        "version": "2.0",
        "routeKey": "POST /orders",
        "rawPath": "/orders",
        "headers": {"idempotency-key": "k-typed"},
        "requestContext": {
            "http": {"method": "POST", "path": "/orders"},
            "authorizer": {"jwt": {"claims": {"sub": "bob"}, "scopes": null}},
            "timeEpoch": 0,
        },
        "isBase64Encoded": false,
    }))
    .unwrap();
    http_api
        .headers
        .insert("Idempotency-Key", http::HeaderValue::from_static("k-typed"));
    let delivered = serde_json::to_value(&http_api).unwrap();
    let bob = invoke(&mut as_json, &subject, delivered.clone(), "r4")
        .await
        .unwrap();
    assert_eq!(bob["body"], "r4", "bob's key, not alice's");
    let again = invoke(&mut as_json, &subject, delivered, "r5")
        .await
        .unwrap();
    assert_eq!(again, bob);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}
