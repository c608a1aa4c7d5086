//! The authorizer's stand-in of a `--front lambda` run. A function URL with `AWS_IAM` auth
//! carries `authorizer.iam.userArn`, an HTTP API names its principal by its authorizer's kind;
//! here the caller's bearer token is put in the request context as one of three authorizers
//! would name it, by principal, so that the run exercises three of idem-lambda's principal
//! rules and the checker can tell idem-lambda's scope (the principal the rule reads) from
//! idem-http's default one (a digest of `Authorization`).

use lambda_http::aws_lambda_events::apigw::{
    ApiGatewayRequestAuthorizer, ApiGatewayRequestAuthorizerIamDescription,
    ApiGatewayRequestAuthorizerJwtDescription,
};
use lambda_http::request::RequestContext;
use lambda_http::Request;

/// The account the IAM users of the run's ARNs belong to.
const ACCOUNT: &str = "123456789012";

/// How an authorizer names a principal.
enum Naming {
    /// An HTTP API's Lambda authorizer: `authorizer.lambda.principalId`.
    LambdaPrincipalId,
    /// `AWS_IAM` auth of a function URL or an HTTP API: `authorizer.iam.userArn`.
    IamUserArn,
    /// An HTTP API's JWT authorizer: `authorizer.jwt.claims.sub`.
    JwtSub,
}

impl Naming {
    fn of(principal: &str) -> Naming {
        match principal {
            "bob" => Naming::IamUserArn,
            "carol" => Naming::JwtSub,
            _ => Naming::LambdaPrincipalId,
        }
    }
}

fn user_arn(principal: &str) -> String {
    format!("arn:aws:iam::{ACCOUNT}:user/{principal}")
}

/// The scope idem-lambda's principal rule gives the keys of `principal`'s requests, as the
/// stand-in names it.
pub(crate) fn principal_scope(principal: &str) -> String {
    match Naming::of(principal) {
        Naming::LambdaPrincipalId => format!("principal:{principal}"),
        Naming::IamUserArn => format!("iam:{}", user_arn(principal)),
        Naming::JwtSub => format!("sub:{principal}"),
    }
}

/// Names the principal of `request`'s bearer token in its request context.
pub(crate) fn authorize(mut request: Request) -> Request {
    let token = request
        .headers()
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::to_owned);
    let context = request.extensions_mut().get_mut::<RequestContext>();
    if let (Some(token), Some(RequestContext::ApiGatewayV2(context))) = (token, context) {
        context.authorizer = Some(authorizer(&token));
    }
    request
}

fn authorizer(principal: &str) -> ApiGatewayRequestAuthorizer {
    let mut authorizer = ApiGatewayRequestAuthorizer::default();
    match Naming::of(principal) {
        Naming::LambdaPrincipalId => {
            let id = serde_json::Value::String(principal.to_owned());
            authorizer.fields.insert("principalId".to_owned(), id);
        }
        Naming::IamUserArn => {
            let mut iam = ApiGatewayRequestAuthorizerIamDescription::default();
            iam.account_id = Some(ACCOUNT.to_owned());
            iam.user_arn = Some(user_arn(principal));
            authorizer.iam = Some(iam);
        }
        Naming::JwtSub => {
            let mut jwt = ApiGatewayRequestAuthorizerJwtDescription::default();
            jwt.claims.insert("sub".to_owned(), principal.to_owned());
            authorizer.jwt = Some(jwt);
        }
    }
    authorizer
}
