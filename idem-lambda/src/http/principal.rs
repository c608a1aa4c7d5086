//! Whose keys these are behind `lambda_http`: the principal of the request context that
//! `lambda_http` puts in every request's extensions, read by the crate's one rule.

use lambda_http::http::request::Parts;
use lambda_http::request::RequestContext;

use crate::principal::principal_of_request_context;

/// The principal of the request whose head is `parts`: its `lambda_http` request context,
/// written as the event carried it, read by [the rule](crate::principal#the-rule). `None`
/// when the context names no principal, or when the request did not come through
/// `lambda_http` and has no context.
pub(crate) fn principal_of_request(parts: &Parts) -> Option<String> {
    let context = parts.extensions.get::<RequestContext>()?;
    match serde_json::to_value(context) {
        Ok(context) => principal_of_request_context(&context),
        Err(error) => {
            // Not expected of plain data; said, since the request is then refused as unscoped.
            tracing::error!(
                target: crate::TARGET,
                %error,
                "the request context could not be written as JSON to read its principal"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    //! The request contexts as `lambda_http` types them and writes them back: each must still
    //! name its principal where the rule reads it.

    use serde_json::{json, Value};

    use super::principal_of_request;

    /// The principal of an event whose request context is `context`, read from the request
    /// `lambda_http` makes of it.
    fn principal(event: Value) -> Option<String> {
        let request = lambda_http::request::from_str(&event.to_string()).expect("an HTTP event");
        principal_of_request(&request.into_parts().0)
    }

    fn rest_api(context: Value) -> Value {
        let mut context = context;
        context["httpMethod"] = json!("POST");
        json!({"httpMethod": "POST", "path": "/orders", "requestContext": context})
    }

    fn http_api(context: Value) -> Value {
        let mut context = context;
        context["http"] = json!({"method": "POST", "path": "/orders"});
        json!({"version": "2.0", "rawPath": "/orders", "requestContext": context})
    }

    #[test]
    fn a_rest_api_lambda_authorizers_principal_id() {
        let event = rest_api(json!({"authorizer": {"principalId": "user-7"}}));
        assert_eq!(principal(event).as_deref(), Some("principal:user-7"));
    }

    #[test]
    fn a_cognito_user_pool_authorizers_sub() {
        let event = rest_api(json!({"authorizer": {"claims": {"sub": "0b7e", "email": "a@b"}}}));
        assert_eq!(principal(event).as_deref(), Some("sub:0b7e"));
    }

    #[test]
    fn a_rest_api_iam_caller() {
        let identity = json!({"userArn": "arn:aws:iam::1:user/ci", "sourceIp": "1.2.3.4"});
        let event = rest_api(json!({"identity": identity}));
        assert_eq!(
            principal(event).as_deref(),
            Some("iam:arn:aws:iam::1:user/ci")
        );
    }

    #[test]
    fn an_http_api_jwt_authorizers_sub() {
        let authorizer = json!({"jwt": {"claims": {"sub": "0b7e"}, "scopes": null}});
        let event = http_api(json!({"authorizer": authorizer}));
        assert_eq!(principal(event).as_deref(), Some("sub:0b7e"));
    }

    #[test]
    fn an_http_api_lambda_authorizers_principal_id() {
        let authorizer = json!({"lambda": {"principalId": "tenant-3", "plan": "gold"}});
        let event = http_api(json!({"authorizer": authorizer}));
        assert_eq!(principal(event).as_deref(), Some("principal:tenant-3"));
    }

    #[test]
    fn a_function_url_with_iam_auth() {
        let iam = json!({"userArn": "arn:aws:iam::1:user/ci", "accountId": "1"});
        let event = http_api(json!({"authorizer": {"iam": iam}}));
        assert_eq!(
            principal(event).as_deref(),
            Some("iam:arn:aws:iam::1:user/ci")
        );
    }

    #[test]
    fn no_authorizer_and_an_alb_name_none() {
        assert_eq!(principal(http_api(json!({}))), None);
        let alb = json!({
            "httpMethod": "POST",
            "path": "/orders",
            "requestContext": {"elb": {"targetGroupArn": "arn:aws:elasticloadbalancing:..."}},
        });
        assert_eq!(principal(alb), None);
    }

    #[test]
    fn a_request_that_did_not_come_through_lambda_http_has_none() {
        let (parts, ()) = lambda_http::http::Request::new(()).into_parts();
        assert_eq!(principal_of_request(&parts), None);
    }
}
