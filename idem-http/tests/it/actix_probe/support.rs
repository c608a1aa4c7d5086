//! What every probe uses: servers of both front ends on loopback, a client, what it saw, and
//! streams that break halfway.

#![allow(dead_code)]

pub(crate) use std::convert::Infallible;
pub(crate) use std::io::{Read, Write};
pub(crate) use std::pin::Pin;
pub(crate) use std::sync::atomic::{AtomicUsize, Ordering};
pub(crate) use std::sync::Arc;
pub(crate) use std::task::{Context, Poll};
pub(crate) use std::time::Duration;

pub(crate) use actix_web::dev::ServerHandle;
pub(crate) use actix_web::{web, App, HttpResponse};
pub(crate) use bytes::Bytes;
pub(crate) use idem_core::Idempotency;
pub(crate) use idem_http::{problem, IdempotencyLayer};
pub(crate) use idem_stores::memory::MemoryStore;
pub(crate) use tokio::sync::{Notify, Semaphore};

pub(crate) const HANG: Duration = Duration::from_secs(60);

/// Serves `router` on loopback; its URL.
pub(crate) async fn axum_serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    url
}

pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(HANG).build().unwrap()
}

pub(crate) fn keyed(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    body: &str,
) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("idempotency-key", key)
        .header("authorization", "Bearer probe")
        .body(body.to_owned())
}

/// What a client saw of one answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) status: u16,
    pub(crate) replayed: bool,
    /// The problem document's `type`, or the body itself.
    pub(crate) said: String,
}

pub(crate) async fn seen(response: reqwest::Response) -> Seen {
    let status = response.status().as_u16();
    let replayed = response.headers().get("idempotent-replayed").is_some();
    let problem = response
        .headers()
        .get("content-type")
        .is_some_and(|value| value == "application/problem+json");
    let body = response.bytes().await.unwrap();
    let said = if problem {
        let document: serde_json::Value = serde_json::from_slice(&body).unwrap();
        document["type"].as_str().unwrap().to_owned()
    } else {
        String::from_utf8_lossy(&body).into_owned()
    };
    Seen {
        status,
        replayed,
        said,
    }
}

pub(crate) async fn send(request: reqwest::RequestBuilder) -> Seen {
    seen(request.send().await.unwrap()).await
}

/// A body whose stream yields `first` and then panics: a handler whose effect was made, whose
/// answer was not.
pub(crate) struct PanicsAfterFirst(pub(crate) u8);

impl futures_core::Stream for PanicsAfterFirst {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0 += 1;
        match self.0 {
            1 => Poll::Ready(Some(Ok(Bytes::from_static(b"first")))),
            _ => panic!("the response stream fails halfway"),
        }
    }
}

/// A body whose stream yields `first` and then fails with an error.
pub(crate) struct FailsAfterFirst(pub(crate) u8);

impl futures_core::Stream for FailsAfterFirst {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0 += 1;
        Poll::Ready(Some(match self.0 {
            1 => Ok(Bytes::from_static(b"first")),
            _ => Err(std::io::Error::other("the response stream fails halfway")),
        }))
    }
}

/// What the first client and the retry saw of a handler whose streamed body broke halfway.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BrokenStream {
    /// Whether the first client read a whole body, as if nothing went wrong.
    pub(crate) first_read_whole: bool,
    pub(crate) retry: Seen,
}

pub(crate) async fn broken_stream(url: &str) -> BrokenStream {
    let client = client();
    let first = keyed(&client, url, "stream-1", "{}").send().await.unwrap();
    let first_read_whole = first.bytes().await.is_ok();
    let retry = send(keyed(&client, url, "stream-1", "{}")).await;
    BrokenStream {
        first_read_whole,
        retry,
    }
}
