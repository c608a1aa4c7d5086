//! Heads across the two worlds: actix-web's request head as the contract reads it, and
//! responses both ways. Names, values and statuses are the same text in both; only the types
//! differ.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::RequestHead;
use actix_web::http::header as actix_header;
use actix_web::HttpResponse;
use http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode, Uri, Version};

use crate::actix::body::{sendable, Outgoing};
use crate::body::Body;

/// The request's head as the contract reads it, without extensions; `None` for a head the
/// `http` crate would not take (never from actix-web's own parser).
pub(crate) fn parts_of(head: &RequestHead) -> Option<http::request::Parts> {
    let (mut parts, ()) = http::Request::new(()).into_parts();
    parts.method = Method::from_bytes(head.method.as_str().as_bytes()).ok()?;
    parts.uri = head.uri.to_string().parse::<Uri>().ok()?;
    parts.version = version_of(head.version);
    parts.headers = HeaderMap::with_capacity(head.headers.len());
    for (name, value) in head.headers.iter() {
        let name = HeaderName::from_bytes(name.as_str().as_bytes()).ok()?;
        let value = HeaderValue::from_bytes(value.as_bytes()).ok()?;
        parts.headers.append(name, value);
    }
    Some(parts)
}

fn version_of(version: actix_web::http::Version) -> Version {
    use actix_web::http::Version as Actix;
    match version {
        Actix::HTTP_09 => Version::HTTP_09,
        Actix::HTTP_10 => Version::HTTP_10,
        Actix::HTTP_2 => Version::HTTP_2,
        Actix::HTTP_3 => Version::HTTP_3,
        _ => Version::HTTP_11,
    }
}

/// The layer's response as actix-web sends it. Its length is actix-web's to declare, from the
/// body.
pub(crate) fn to_actix(response: Response<Body>) -> HttpResponse<BoxBody> {
    let (parts, body) = response.into_parts();
    let status = actix_web::http::StatusCode::from_u16(parts.status.as_u16())
        .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR);
    let mut answer = HttpResponse::with_body(status, BoxBody::new(Outgoing(body)));
    let headers = answer.headers_mut();
    for (name, value) in parts.headers.iter() {
        if name == CONTENT_LENGTH || name == TRANSFER_ENCODING {
            continue;
        }
        let name = actix_header::HeaderName::from_bytes(name.as_str().as_bytes());
        let value = actix_header::HeaderValue::from_bytes(value.as_bytes());
        if let (Ok(name), Ok(value)) = (name, value) {
            headers.append(name, value);
        }
    }
    answer
}

/// A handler's response as the contract reads it.
pub(crate) fn from_actix<B>(response: HttpResponse<B>) -> Response<Body>
where
    B: MessageBody + 'static,
{
    let status = StatusCode::from_u16(response.status().as_u16())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut headers = HeaderMap::with_capacity(response.headers().len());
    for (name, value) in response.headers().iter() {
        let name = HeaderName::from_bytes(name.as_str().as_bytes());
        let value = HeaderValue::from_bytes(value.as_bytes());
        if let (Ok(name), Ok(value)) = (name, value) {
            headers.append(name, value);
        }
    }
    let mut answer = Response::new(sendable(response.into_body()));
    *answer.status_mut() = status;
    *answer.headers_mut() = headers;
    answer
}
