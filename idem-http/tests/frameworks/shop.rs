//! The handlers both front ends serve, written once: what they do, counted, with the signals
//! the cases wait for.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::sync::{mpsc, Notify, Semaphore};

/// The principal an authentication middleware sets, from the `x-user` header.
#[derive(Clone)]
pub struct UserId(pub String);

impl std::fmt::Display for UserId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "user:{}", self.0)
    }
}

/// A shop whose handlers count their runs.
pub struct Shop {
    runs: AtomicUsize,
    /// Told when `/held` starts.
    pub started: Notify,
    /// One permit lets one `/held` answer.
    pub gate: Semaphore,
    /// Told when `/held` has answered.
    pub finished: Notify,
    /// Lets `/events` send its second event.
    pub more_events: Notify,
}

/// What a handler answers: status, content type, body.
pub enum Answer {
    Whole(u16, &'static str, String),
    Streamed(Chunks),
}

impl Default for Shop {
    fn default() -> Self {
        Shop {
            runs: AtomicUsize::new(0),
            started: Notify::new(),
            gate: Semaphore::new(0),
            finished: Notify::new(),
            more_events: Notify::new(),
        }
    }
}

impl Shop {
    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    /// `POST /payments`: charges, or asks to be tried again when the body says `fail`.
    pub fn pay(&self, body: &[u8]) -> Answer {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let body = String::from_utf8_lossy(body);
        if body.contains("fail") {
            return Answer::Whole(503, "text/plain", "try again".into());
        }
        Answer::Whole(201, "text/plain", format!("charged: {body}"))
    }

    /// `POST /panics`: fails halfway, its effect perhaps made.
    pub fn panics(&self) -> Answer {
        self.runs.fetch_add(1, Ordering::SeqCst);
        panic!("the handler fails halfway");
    }

    /// `POST /held`: answers once the test opens the gate.
    pub async fn held(&self, body: &[u8]) -> Answer {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.started.notify_one();
        self.gate.acquire().await.unwrap().forget();
        let answer = format!("held: {}", String::from_utf8_lossy(body));
        self.finished.notify_one();
        Answer::Whole(201, "text/plain", answer)
    }

    /// `POST /events`: a server-sent-events answer whose second event waits for the test.
    pub fn events(self: std::sync::Arc<Self>) -> Answer {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let (sender, chunks) = mpsc::channel(1);
        tokio::spawn(async move {
            let _ = sender.send(Bytes::from_static(b"data: first\n\n")).await;
            self.more_events.notified().await;
            let _ = sender.send(Bytes::from_static(b"data: second\n\n")).await;
        });
        Answer::Streamed(Chunks(chunks))
    }
}

/// The chunks of a streamed answer, as both frameworks take a stream.
pub struct Chunks(mpsc::Receiver<Bytes>);

impl futures_core::Stream for Chunks {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(Ok))
    }
}
