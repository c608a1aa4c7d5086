//! The handlers every front end serves, written once: what they do, counted, with the signals
//! the cases wait for.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
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

/// The header by which the shop asks the front end's middleware inside the layer to fail the
/// request with a service error once the handler has answered.
pub const SERVICE_FAILS: &str = "x-service-fails";

/// A shop whose handlers count their runs.
pub struct Shop {
    runs: AtomicUsize,
    /// How many charges `/steps` made (its step, which a retry must not make again).
    charges: AtomicUsize,
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
    /// A 201 marked with [`SERVICE_FAILS`], for the middleware inside the layer to fail.
    Failing,
}

impl Default for Shop {
    fn default() -> Self {
        Shop {
            runs: AtomicUsize::new(0),
            charges: AtomicUsize::new(0),
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

    pub fn charges(&self) -> usize {
        self.charges.load(Ordering::SeqCst)
    }

    /// Every route: what a front end calls for each `POST`.
    pub async fn serve(self: Arc<Self>, path: &str, body: Bytes) -> Answer {
        match path {
            "/payments" => self.pay(&body),
            "/held" => self.held(&body).await,
            "/events" => self.events(),
            "/panics" => self.panics(),
            "/context" => self.context(),
            "/steps" => self.steps(&body).await,
            "/fails" => self.fails(),
            _ => Answer::Whole(404, "text/plain", format!("no route {path}")),
        }
    }

    /// `POST /context`: says which call the handler runs in.
    pub fn context(&self) -> Answer {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let said = match idem_core::context() {
            Some(call) => format!("attempt {} of a call", call.attempt()),
            None => "outside any call".to_owned(),
        };
        Answer::Whole(201, "text/plain", said)
    }

    /// `POST /steps`: charges in a step, then, on its first run, finds the ledger down (a 502,
    /// which is not stored). A retry resumes after the charge.
    pub async fn steps(&self, body: &[u8]) -> Answer {
        let run = self.runs.fetch_add(1, Ordering::SeqCst);
        let charged = idem_core::step("charge", async {
            Ok::<_, idem_core::Error>(self.charges.fetch_add(1, Ordering::SeqCst) + 1)
        })
        .await;
        let charge = match charged {
            Ok(charge) => charge,
            Err(error) => return Answer::Whole(500, "text/plain", error.to_string()),
        };
        if run == 0 {
            return Answer::Whole(502, "text/plain", "the ledger is down".into());
        }
        let body = String::from_utf8_lossy(body);
        Answer::Whole(201, "text/plain", format!("charge {charge}: {body}"))
    }

    /// `POST /fails`: charges, and its front end then fails the request (see [`SERVICE_FAILS`]).
    pub fn fails(&self) -> Answer {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Answer::Failing
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
    pub fn events(self: Arc<Self>) -> Answer {
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
