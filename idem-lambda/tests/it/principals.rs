//! The principal rule on every shape of HTTP event Lambda receives: API Gateway's REST API
//! (Lambda, Cognito and IAM authorization), its HTTP API (JWT, Lambda and IAM authorizers), a
//! function URL, and an ALB, typed as `aws_lambda_events` writes them where it has a type.

use aws_lambda_events::alb::AlbTargetGroupRequest;
use aws_lambda_events::apigw::{ApiGatewayProxyRequest, ApiGatewayV2httpRequest};
use aws_lambda_events::lambda_function_urls::LambdaFunctionUrlRequest;
use idem_lambda::principal::{
    principal_of_event, principal_of_request_context, request_context_of,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

/// `event` as its type reads and writes it, as a function taking that type would see it.
fn typed<T: DeserializeOwned + Serialize>(event: Value) -> Value {
    let typed: T = serde_json::from_value(event).expect("the type reads the event");
    serde_json::to_value(typed).unwrap()
}

fn rest(context: Value) -> Value {
    let mut context = context;
    context["httpMethod"] = json!("POST");
    typed::<ApiGatewayProxyRequest>(json!({
        "httpMethod": "POST",
        "headers": {"Idempotency-Key": "k"},
        "requestContext": context,
    }))
}

fn http_api(authorizer: Value) -> Value {
    typed::<ApiGatewayV2httpRequest>(json!({
        "version": "2.0",
        "routeKey": "POST /orders",
        "headers": {"idempotency-key": "k"},
        "requestContext": {
            "http": {"method": "POST", "path": "/orders"},
            "authorizer": authorizer,
            "timeEpoch": 0,
        },
    }))
}

#[test]
fn a_rest_api_lambda_authorizer_names_its_principal_id() {
    let event = rest(json!({"authorizer": {"principalId": "user-7", "tenant": "t-1"}}));
    assert_eq!(
        event["requestContext"]["authorizer"]["principalId"],
        "user-7"
    );
    assert_eq!(
        principal_of_event(&event).as_deref(),
        Some("principal:user-7")
    );
}

#[test]
fn a_rest_api_cognito_authorizer_names_the_subject() {
    let event = rest(json!({"authorizer": {"claims": {"sub": "0b7e", "email": "a@b.c"}}}));
    assert_eq!(principal_of_event(&event).as_deref(), Some("sub:0b7e"));
    // An empty principalId beside the claims is none.
    let event = rest(json!({"authorizer": {"principalId": "", "claims": {"sub": "0b7e"}}}));
    assert_eq!(principal_of_event(&event).as_deref(), Some("sub:0b7e"));
}

#[test]
fn rest_api_iam_authorization_names_the_identity() {
    let user = rest(json!({"identity": {"userArn": "arn:aws:iam::1:user/ci"}}));
    assert_eq!(
        principal_of_event(&user).as_deref(),
        Some("iam:arn:aws:iam::1:user/ci")
    );
    // Every identity of a Cognito pool signs with one role: the identity tells them apart.
    let pooled = rest(json!({"identity": {
        "userArn": "arn:aws:sts::1:assumed-role/Cognito_Auth/CognitoIdentityCredentials",
        "cognitoIdentityId": "us-east-1:3f29",
    }}));
    assert_eq!(
        principal_of_event(&pooled).as_deref(),
        Some("cognito-identity:us-east-1:3f29")
    );
}

#[test]
fn an_http_api_jwt_authorizer_names_the_subject() {
    let event = http_api(json!({"jwt": {"claims": {"sub": "0b7e"}, "scopes": ["orders"]}}));
    assert_eq!(
        event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"],
        "0b7e"
    );
    assert_eq!(principal_of_event(&event).as_deref(), Some("sub:0b7e"));
}

#[test]
fn an_http_api_lambda_authorizer_names_the_principal_id_of_its_context() {
    let event = http_api(json!({"lambda": {"principalId": "user-7", "tenant": "t-1"}}));
    assert_eq!(
        principal_of_event(&event).as_deref(),
        Some("principal:user-7")
    );
    let silent = http_api(json!({"lambda": {"tenant": "t-1"}}));
    assert_eq!(
        principal_of_event(&silent),
        None,
        "a context without principalId"
    );
}

#[test]
fn an_http_api_iam_authorizer_names_the_identity() {
    let arn = "arn:aws:iam::1:user/ci";
    let event = http_api(json!({"iam": {"userArn": arn, "accountId": "1"}}));
    assert_eq!(principal_of_event(&event), Some(format!("iam:{arn}")));
    let pooled = http_api(json!({"iam": {
        "userArn": "arn:aws:sts::1:assumed-role/Cognito_Auth/CognitoIdentityCredentials",
        "cognitoIdentity": {"amr": ["authenticated"], "identityId": "us-east-1:3f29"},
    }}));
    assert_eq!(
        principal_of_event(&pooled).as_deref(),
        Some("cognito-identity:us-east-1:3f29")
    );
}

#[test]
fn a_function_url_names_its_iam_caller_or_no_one() {
    let url = |authorizer: Value| {
        typed::<LambdaFunctionUrlRequest>(json!({
            "version": "2.0",
            "rawPath": "/",
            "headers": {"idempotency-key": "k"},
            "isBase64Encoded": false,
            "requestContext": {
                "http": {"method": "POST", "path": "/"},
                "authorizer": authorizer,
                "timeEpoch": 0,
            },
        }))
    };
    let arn = "arn:aws:iam::1:role/caller";
    let event = url(json!({"iam": {"userArn": arn}}));
    assert_eq!(principal_of_event(&event), Some(format!("iam:{arn}")));
    assert_eq!(
        principal_of_event(&url(Value::Null)),
        None,
        "auth type NONE"
    );
}

#[test]
fn an_alb_request_has_no_principal() {
    let event = typed::<AlbTargetGroupRequest>(json!({
        "httpMethod": "POST",
        "headers": {"idempotency-key": "k"},
        "requestContext": {"elb": {"targetGroupArn": "arn:aws:elasticloadbalancing:tg"}},
        "isBase64Encoded": false,
    }));
    assert!(event["requestContext"].is_object());
    assert_eq!(principal_of_event(&event), None);
}

/// An event is an HTTP event when its request context shows its front end; a Lambda
/// destination's record has a `requestContext` too, and is none.
#[test]
fn an_http_event_is_one_whose_request_context_shows_its_front_end() {
    let rest = rest(json!({"requestId": "r"}));
    let http_api = http_api(Value::Null);
    let alb = typed::<AlbTargetGroupRequest>(json!({
        "httpMethod": "POST",
        "requestContext": {"elb": {"targetGroupArn": "arn:aws:elasticloadbalancing:tg"}},
        "isBase64Encoded": false,
    }));
    let websocket = json!({"requestContext": {"connectionId": "c-1", "routeKey": "$default"}});
    for event in [&rest, &http_api, &alb, &websocket] {
        assert!(request_context_of(event).is_some(), "{event}");
    }
    let destination = json!({
        "version": "1.0",
        "requestContext": {
            "requestId": "e6f3a1b2",
            "functionArn": "arn:aws:lambda:eu-west-1:1:function:orders:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 3,
            "authorizer": {"principalId": "user-7"},
        },
        "requestPayload": {"order_id": "o-1"},
    });
    assert_eq!(request_context_of(&destination), None);
    assert_eq!(principal_of_event(&destination), None, "not an HTTP event");
    let unmarked = json!({"requestContext": {"httpMethod": null, "apiId": null}});
    assert_eq!(request_context_of(&unmarked), None, "null shows nothing");
}

#[test]
fn other_events_and_blank_names_have_no_principal() {
    assert_eq!(principal_of_event(&json!({"Records": []})), None);
    assert_eq!(principal_of_event(&json!({"requestContext": "x"})), None);
    let blank = json!({"authorizer": {"principalId": " ", "jwt": {"claims": {"sub": "s"}}}});
    assert_eq!(
        principal_of_request_context(&blank).as_deref(),
        Some("sub:s")
    );
    let untyped = json!({"authorizer": {"principalId": 42}});
    assert_eq!(principal_of_request_context(&untyped), None);
}
