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
