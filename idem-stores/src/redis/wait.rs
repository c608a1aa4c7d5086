//! Waiting for a record to change: wake-ups published by the scripts, received through one
//! subscription per store, with slow polling as a safety net.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::{PubSubSink, PubSubStream};
use redis::Client;
use tokio::sync::{Notify, OnceCell};

/// The shortest and longest pause between two polls of a record.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Backoff {
    pub(crate) first: Duration,
    pub(crate) max: Duration,
}

/// Polls while no subscription can be had (a connection given without its client).
pub(crate) const POLLING: Backoff = Backoff {
    first: Duration::from_millis(10),
    max: Duration::from_millis(500),
};

/// Polls behind a subscription, only in case a wake-up was lost with the connection.
pub(crate) const SAFETY_NET: Backoff = Backoff {
    first: Duration::from_secs(1),
    max: Duration::from_secs(5),
};

impl Backoff {
    /// The pauses: each twice the last up to `max`, each drawn from 50 % to 100 % of that, so
    /// that many waiters on one key spread their polls.
    pub(crate) fn pauses(self) -> impl Iterator<Item = Duration> {
        std::iter::successors(Some(self.first), move |last| {
            Some((*last * 2).min(self.max))
        })
        .map(|pause| pause.mul_f64(0.5 + fastrand::f64() / 2.0))
    }
}

/// The wake-ups of one store: a subscription to the channel of every key a local caller waits
/// on (the channel is named like the key), on one connection opened on the first wait.
pub(crate) struct Wakeups {
    client: Client,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The subscription's sink, while its connection is up.
    sink: Option<PubSubSink>,
    /// The channels local callers wait on, with their waiters.
    channels: HashMap<String, Channel>,
}

struct Channel {
    notify: Arc<Notify>,
    waiters: usize,
    /// Set once the server confirmed the subscription: whether it succeeded.
    subscribed: Arc<OnceCell<bool>>,
}

/// One caller's interest in a channel; leaving it unsubscribes the last one.
pub(crate) struct Interest {
    wakeups: Arc<Wakeups>,
    channel: String,
    /// Notified on every message on the channel, and when the subscription's connection drops.
    pub(crate) notify: Arc<Notify>,
}

impl Wakeups {
    pub(crate) fn new(client: Client) -> Arc<Self> {
        Arc::new(Wakeups {
            client,
            state: Mutex::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No code panics while holding the lock.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Subscribes this caller to `channel`; `None` when no subscription can be had now (the
    /// caller then polls).
    pub(crate) async fn subscribe(self: &Arc<Self>, channel: &str) -> Option<Interest> {
        let (notify, subscribed) = {
            let mut state = self.lock();
            let entry = state
                .channels
                .entry(channel.to_owned())
                .or_insert_with(|| Channel {
                    notify: Arc::default(),
                    waiters: 0,
                    subscribed: Arc::default(),
                });
            entry.waiters += 1;
            (entry.notify.clone(), entry.subscribed.clone())
        };
        let interest = Interest {
            wakeups: self.clone(),
            channel: channel.to_owned(),
            notify,
        };
        // The first caller subscribes; the others wait for the server's confirmation, so that
        // every caller knows the subscription is active before it looks at the record.
        let active = subscribed
            .get_or_init(|| async {
                let Some(mut sink) = self.sink().await else {
                    return false;
                };
                match sink.subscribe(channel).await {
                    Ok(()) => true,
                    Err(error) => {
                        tracing::debug!(target: super::TARGET, %error, "subscribing for wake-ups failed; polling");
                        self.lock().sink = None;
                        false
                    }
                }
            })
            .await;
        active.then_some(interest)
    }

    /// The subscription's sink, connecting first if there is none.
    async fn sink(self: &Arc<Self>) -> Option<PubSubSink> {
        if let Some(sink) = self.lock().sink.clone() {
            return Some(sink);
        }
        let pubsub = match self.client.get_async_pubsub().await {
            Ok(pubsub) => pubsub,
            Err(error) => {
                tracing::debug!(target: super::TARGET, %error, "no connection for wake-ups; polling");
                return None;
            }
        };
        let (sink, stream) = pubsub.split();
        let mut state = self.lock();
        if let Some(raced) = &state.sink {
            return Some(raced.clone());
        }
        state.sink = Some(sink.clone());
        drop(state);
        tokio::spawn(dispatch(Arc::downgrade(self), stream));
        Some(sink)
    }
}

/// Wakes the waiters of each message's channel until the connection drops; then wakes every
/// waiter, so that each looks at its record again, and forgets the sink so that the next wait
/// connects anew.
async fn dispatch(wakeups: Weak<Wakeups>, mut stream: PubSubStream) {
    while let Some(message) = stream.next().await {
        let Some(wakeups) = wakeups.upgrade() else {
            return;
        };
        let state = wakeups.lock();
        if let Some(channel) = state.channels.get(message.get_channel_name()) {
            channel.notify.notify_waiters();
        }
    }
    let Some(wakeups) = wakeups.upgrade() else {
        return;
    };
    let mut state = wakeups.lock();
    state.sink = None;
    for channel in state.channels.values_mut() {
        channel.subscribed = Arc::default();
        channel.notify.notify_waiters();
    }
}

impl Drop for Interest {
    fn drop(&mut self) {
        let mut state = self.wakeups.lock();
        let Some(channel) = state.channels.get_mut(&self.channel) else {
            return;
        };
        channel.waiters -= 1;
        if channel.waiters > 0 {
            return;
        }
        state.channels.remove(&self.channel);
        let Some(mut sink) = state.sink.clone() else {
            return;
        };
        let name = std::mem::take(&mut self.channel);
        let wakeups = Arc::downgrade(&self.wakeups);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            // A caller that subscribes again between this check and the unsubscribe loses its
            // wake-ups to it; the safety-net poll still finds the change.
            runtime.spawn(async move {
                let waited_on = wakeups
                    .upgrade()
                    .is_some_and(|w| w.lock().channels.contains_key(&name));
                if !waited_on {
                    let _ = sink.unsubscribe(name).await;
                }
            });
        }
    }
}
