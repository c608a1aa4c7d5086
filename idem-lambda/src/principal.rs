//! Whose request it is: the principal API Gateway, a Lambda function URL or an ALB says sent
//! an HTTP event, read from the event's `requestContext`.
//!
//! One rule for every front end that serves API Gateway from Lambda: the
//! [`IdempotentHandler`](crate::IdempotentHandler) scopes the keys of HTTP events by it, and
//! so may any other integration that reads a `requestContext`.
//!
//! # The rule
//!
//! The first of these that the request context holds as a non-blank string is the principal,
//! written with the prefix shown so that identifiers of two kinds never meet in one scope:
//!
//! | # | field of `requestContext` | who sets it | principal |
//! |---|---|---|---|
//! | 1 | `authorizer.principalId` | a Lambda authorizer of a REST API (its `principalId`) | `principal:<id>` |
//! | 2 | `authorizer.lambda.principalId` | a Lambda authorizer of an HTTP API, or a WebSocket one: the `principalId` it puts in its `context` | `principal:<id>` |
//! | 3 | `authorizer.claims.sub` | a Cognito user pool authorizer of a REST API | `sub:<sub>` |
//! | 4 | `authorizer.jwt.claims.sub` | a JWT authorizer of an HTTP API | `sub:<sub>` |
//! | 5 | `identity.cognitoIdentityId` | IAM authorization of a REST API, with Cognito identity pool credentials | `cognito-identity:<id>` |
//! | 6 | `authorizer.iam.cognitoIdentity.identityId` | the same on an HTTP API or a function URL | `cognito-identity:<id>` |
//! | 7 | `identity.userArn` | IAM authorization of a REST API | `iam:<arn>` |
//! | 8 | `authorizer.iam.userArn` | IAM authorization of an HTTP API or a function URL (`AWS_IAM`) | `iam:<arn>` |
//!
//! A Cognito identity comes before the ARN, because every identity of a pool signs its
//! requests with one role's credentials: its `userArn` would be one principal for all of them.
//! A Cognito user pool's and a JWT authorizer's `sub` are one kind, so a function moved from a
//! REST API to an HTTP API keeps its users' records.
//!
//! An ALB's request context (`elb` only), a function URL with `NONE` auth, and a route without
//! an authorizer have no principal. Neither has anything else the request context holds: an
//! API key (`identity.apiKey`) is a credential a client may share, and a source IP is shared
//! by every client behind one NAT. An HTTP API Lambda authorizer that returns no
//! `principalId` in its context has none either: return one, or name the principal with
//! [`IdempotentHandlerBuilder::principal`](crate::IdempotentHandlerBuilder::principal).
//!
//! The field names are those the events carry, in `aws_lambda_events`' types too: an
//! `ApiGatewayProxyRequest` writes its authorizer's fields flat (`authorizer.principalId`,
//! `authorizer.claims`), an `ApiGatewayV2httpRequest` and a `LambdaFunctionUrlRequest` under
//! `jwt`, `lambda` and `iam`.
//!
//! # HTTP events
//!
//! An event is an HTTP event when its `requestContext` shows the HTTP front end that sent it,
//! by holding (not `null`) at least one of these fields:
//!
//! | front end | fields of `requestContext` |
//! |---|---|
//! | API Gateway REST API | `httpMethod`, `resourcePath`, `apiId`, `domainName` |
//! | API Gateway HTTP API, a Lambda function URL | `http` (an object), `apiId`, `domainName` |
//! | API Gateway WebSocket API | `connectionId`, `apiId` (beside its `routeKey`) |
//! | an Application Load Balancer | `elb` (an object) |
//! | a VPC Lattice service (its payload version 2) | `serviceArn`, `targetGroupArn` |
//!
//! Other events carry a `requestContext` too, without any of these: a Lambda destination's
//! record (`requestId`, `functionArn`, `condition`, `approximateInvokeCount`), for one. They
//! are not HTTP events: their keys are not scoped by a principal, and they are not refused
//! for naming none.

use serde_json::Value;

/// The fields of a `requestContext` that show an HTTP front end: see [HTTP
/// events](self#http-events).
const HTTP_FRONT_FIELDS: &[&str] = &[
    "httpMethod",
    "resourcePath",
    "http",
    "apiId",
    "domainName",
    "connectionId",
    "elb",
    "serviceArn",
    "targetGroupArn",
];

/// Where a principal is read, in order, and the prefix it is written with.
const RULE: &[(&[&str], &str)] = &[
    (&["authorizer", "principalId"], "principal"),
    (&["authorizer", "lambda", "principalId"], "principal"),
    (&["authorizer", "claims", "sub"], "sub"),
    (&["authorizer", "jwt", "claims", "sub"], "sub"),
    (&["identity", "cognitoIdentityId"], "cognito-identity"),
    (
        &["authorizer", "iam", "cognitoIdentity", "identityId"],
        "cognito-identity",
    ),
    (&["identity", "userArn"], "iam"),
    (&["authorizer", "iam", "userArn"], "iam"),
];

/// The principal of a request whose `requestContext` is `context` (API Gateway REST, HTTP or
/// WebSocket API, a Lambda function URL, an ALB), by [the rule](self#the-rule); `None` when
/// it names none.
///
/// ```
/// use idem_lambda::principal::principal_of_request_context;
/// use serde_json::json;
///
/// let rest = json!({"authorizer": {"principalId": "user-7", "integrationLatency": 3}});
/// assert_eq!(principal_of_request_context(&rest).as_deref(), Some("principal:user-7"));
///
/// let http_api = json!({"authorizer": {"jwt": {"claims": {"sub": "0b7e"}, "scopes": null}}});
/// assert_eq!(principal_of_request_context(&http_api).as_deref(), Some("sub:0b7e"));
///
/// let alb = json!({"elb": {"targetGroupArn": "arn:aws:elasticloadbalancing:..."}});
/// assert_eq!(principal_of_request_context(&alb), None);
/// ```
pub fn principal_of_request_context(context: &Value) -> Option<String> {
    RULE.iter().find_map(|(path, prefix)| {
        let found = path
            .iter()
            .try_fold(context, |node, field| node.get(field))?
            .as_str();
        idem_protocol::scope::effective(found).map(|id| format!("{prefix}:{id}"))
    })
}

/// Whether `context`, an event's `requestContext`, shows an HTTP front end (API Gateway, a
/// function URL, an ALB, VPC Lattice): [HTTP events](self#http-events).
///
/// ```
/// use idem_lambda::principal::is_http_request_context;
/// use serde_json::json;
///
/// assert!(is_http_request_context(&json!({"httpMethod": "POST", "requestId": "r"})));
/// assert!(is_http_request_context(&json!({"http": {"method": "POST"}, "apiId": "a1"})));
/// assert!(is_http_request_context(&json!({"elb": {"targetGroupArn": "arn:..."}})));
/// // A Lambda destination's record.
/// let destination = json!({
///     "requestId": "r",
///     "functionArn": "arn:aws:lambda:eu-west-1:1:function:orders:$LATEST",
///     "condition": "RetriesExhausted",
///     "approximateInvokeCount": 3,
/// });
/// assert!(!is_http_request_context(&destination));
/// ```
pub fn is_http_request_context(context: &Value) -> bool {
    context.as_object().is_some_and(|fields| {
        HTTP_FRONT_FIELDS
            .iter()
            .any(|field| fields.get(*field).is_some_and(|value| !value.is_null()))
    })
}

/// The `requestContext` of `event` when it is an [HTTP event](self#http-events) (API
/// Gateway, a function URL, an ALB, VPC Lattice). Other events (SQS, direct invokes, a Lambda
/// destination's record) have none.
pub fn request_context_of(event: &Value) -> Option<&Value> {
    event
        .get("requestContext")
        .filter(|context| is_http_request_context(context))
}

/// The principal of `event`, an [HTTP event](self#http-events)'s as
/// [`principal_of_request_context`] reads its `requestContext`; `None` for any other event,
/// or one whose request context names none.
///
/// ```
/// use serde_json::json;
///
/// let event = json!({
///     "headers": {"idempotency-key": "k-1"},
///     "requestContext": {
///         "httpMethod": "POST",
///         "identity": {"userArn": "arn:aws:iam::1:user/ci"},
///     },
/// });
/// let principal = idem_lambda::principal::principal_of_event(&event);
/// assert_eq!(principal.as_deref(), Some("iam:arn:aws:iam::1:user/ci"));
/// ```
pub fn principal_of_event(event: &Value) -> Option<String> {
    request_context_of(event).and_then(principal_of_request_context)
}
