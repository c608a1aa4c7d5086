//! Round trips per call, counted twice: by the server (every command a client sent, as
//! `MONITOR` shows it, leaving out the commands scripts run inside the server) and by the store
//! (`RedisStore::round_trips`). The two must agree, and a stray plain command shows.
//!
//! A reservation is one plain `SET key claim NX GET PX ms`: it reserves a free key, and
//! answers a replay or a duplicate from the record it finds; only a takeover or the reuse of an
//! expired record goes on to the reserve script.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idem_core::{step, Call, Error, Fingerprint, Idempotency, ManualClock};
use idem_test_servers::redis::server::TestRedis;
use idem_test_servers::redis::target::RedisTarget;
use idem_tests::interrupt::held_in_body;
use tokio::sync::Semaphore;

/// A target on a server of this test's own, so that no other test's commands are counted.
async fn target() -> Option<(RedisTarget, Idempotency)> {
    let target = RedisTarget::on(TestRedis::start_owned()?).await;
    let idem = Idempotency::new(target.redis_store().clone()).with_namespace("round-trips");
    Some((target, idem))
}

fn call(idem: &Idempotency, order: &str) -> Call {
    let key = idem.key("orders.create").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&(order, 3)).unwrap())
}

async fn create(idem: &Idempotency, order: &str) -> Result<(String, bool), Error> {
    let done = idem
        .run(call(idem, order), async {
            Ok::<_, Error>(format!("created {order}"))
        })
        .await?;
    Ok((done.value, done.replayed))
}

/// A call whose body counts its runs in `runs` and returns the count; its value and whether it
/// was replayed.
async fn counted(idem: &Idempotency, order: &str, runs: &AtomicUsize) -> (usize, bool) {
    let done = idem
        .run(call(idem, order), async {
            Ok::<_, Error>(runs.fetch_add(1, Ordering::SeqCst) + 1)
        })
        .await
        .unwrap();
    (done.value, done.replayed)
}

async fn fail(idem: &Idempotency, order: &str) -> Error {
    idem.run(call(idem, order), async {
        Err::<String, _>(Error::InvalidKey("declined".into()))
    })
    .await
    .unwrap_err()
}

/// Where a checkout stops after its first step.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Never,
    Fail,
    Hang,
}

/// A checkout of two steps, `charge` then `ledger`, counting how often each ran.
struct Checkout {
    charges: AtomicUsize,
    ledgers: AtomicUsize,
    /// A permit once the charge step returned.
    charged: Semaphore,
}

impl Default for Checkout {
    fn default() -> Self {
        Checkout {
            charges: AtomicUsize::new(0),
            ledgers: AtomicUsize::new(0),
            charged: Semaphore::new(0),
        }
    }
}

impl Checkout {
    async fn run(
        &self,
        idem: &Idempotency,
        order: &str,
        stop: Stop,
    ) -> Result<(String, u64), Error> {
        let done = idem
            .run(call(idem, order), async {
                let charge = step("charge", async {
                    let run = self.charges.fetch_add(1, Ordering::SeqCst) + 1;
                    Ok::<_, Error>(format!("ch_{run}"))
                })
                .await?;
                self.charged.add_permits(1);
                match stop {
                    Stop::Never => {}
                    Stop::Fail => return Err(Error::InvalidKey("declined".into())),
                    Stop::Hang => std::future::pending::<()>().await,
                }
                let entry = step("ledger", async {
                    Ok::<_, Error>(self.ledgers.fetch_add(1, Ordering::SeqCst) as u64 + 1)
                })
                .await?;
                Ok((charge, entry))
            })
            .await?;
        Ok(done.value)
    }

    fn runs(&self) -> (usize, usize) {
        (
            self.charges.load(Ordering::SeqCst),
            self.ledgers.load(Ordering::SeqCst),
        )
    }
}

/// Runs `scenario` and returns the commands clients sent the server for it, after checking
/// that the store counted each of them.
async fn count<F: Future<Output = ()>>(target: &RedisTarget, scenario: F) -> Vec<String> {
    let before = target.redis_store().round_trips();
    let ((), sent) = target.client_commands(scenario).await;
    assert_eq!(
        target.redis_store().round_trips() - before,
        sent.len() as u64,
        "the store's own count must agree with what the server received: {sent:?}"
    );
    sent
}

async fn each_call_takes_the_documented_round_trips() {
    let Some((target, idem)) = target().await else {
        return;
    };
    // Load the complete and release scripts: the server learns them from the first EVAL of
    // each. The reservations below are plain SETs and need no script.
    create(&idem, "warm-1").await.unwrap();
    fail(&idem, "warm-2").await;

    let sent = count(&target, async {
        assert!(!create(&idem, "o-1").await.unwrap().1);
    })
    .await;
    assert_eq!(
        sent,
        ["SET", "EVALSHA"],
        "fresh call: reserve (SET) + complete"
    );

    let sent = count(&target, async {
        assert!(create(&idem, "o-1").await.unwrap().1);
    })
    .await;
    assert_eq!(sent, ["SET"], "replay: the SET finds the record");

    let sent = count(&target, async {
        let err = fail(&idem, "o-2").await;
        assert!(matches!(err, Error::InvalidKey(_)), "{err:?}");
    })
    .await;
    assert_eq!(sent, ["SET", "EVALSHA"], "error: reserve (SET) + release");

    // A duplicate while the first call is held inside its body.
    let (finish, first) = held_in_body(&idem, call(&idem, "o-3"), "created o-3".to_owned()).await;
    let sent = count(&target, async {
        let err = create(&idem, "o-3").await.unwrap_err();
        assert!(matches!(err, Error::InProgress { .. }), "{err:?}");
    })
    .await;
    assert_eq!(sent, ["SET"], "conflict: the SET finds the reservation");
    finish.send(()).unwrap();
    assert!(!first.await.unwrap().unwrap().replayed);

    let sent = count(&target, async {
        assert!(create(&idem, "o-3").await.unwrap().1);
    })
    .await;
    assert_eq!(sent, ["SET"], "replay of the call that ran meanwhile");
}

/// A replay runs no script: `REPLAYS` replays of one completed key are `REPLAYS` plain `SET`s,
/// by `MONITOR`, by the store's count and by the server's command statistics alike.
async fn replays_are_plain_sets_and_run_no_script() {
    const REPLAYS: usize = 20;
    let Some((target, idem)) = target().await else {
        return;
    };
    assert!(!create(&idem, "o-1").await.unwrap().1);

    target.reset_command_stats().await;
    let sent = count(&target, async {
        for _ in 0..REPLAYS {
            assert!(create(&idem, "o-1").await.unwrap().1);
        }
    })
    .await;
    assert_eq!(sent, ["SET"; REPLAYS], "one SET per replay, nothing else");
    let calls = target.command_calls().await;
    let calls_of = |name: &str| -> u64 {
        calls
            .iter()
            .filter(|(command, _)| command == name)
            .map(|(_, n)| n)
            .sum()
    };
    assert_eq!(calls_of("set"), REPLAYS as u64, "{calls:?}");
    for script in ["evalsha", "eval"] {
        assert_eq!(
            calls_of(script),
            0,
            "no script runs for a replay: {calls:?}"
        );
    }
}

/// A completed record past its TTL on the caller's clock is reused: the SET finds it, the
/// reserve script reserves it again, and the body runs once more.
async fn an_expired_record_is_reused_by_the_reserve_script() {
    let Some((target, idem)) = target().await else {
        return;
    };
    let clock = ManualClock::new();
    let idem = idem.with_clock(clock.clone());
    let runs = AtomicUsize::new(0);
    assert!(!counted(&idem, "warm", &runs).await.1);
    assert!(!counted(&idem, "o-1", &runs).await.1);
    assert!(counted(&idem, "o-1", &runs).await.1);
    clock.advance(idem_core::DEFAULT_TTL + Duration::from_secs(1));
    // Load the reserve and complete scripts by reusing another expired record.
    assert!(!counted(&idem, "warm", &runs).await.1);
    let before = runs.load(Ordering::SeqCst);

    let sent = count(&target, async {
        let (value, replayed) = counted(&idem, "o-1", &runs).await;
        assert!(!replayed, "an expired record does not replay");
        assert_eq!(value, before + 1, "the body ran again");
    })
    .await;
    assert_eq!(
        sent,
        ["SET", "EVALSHA", "EVALSHA"],
        "the SET finds the expired record, the reserve script reuses it, then complete"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        before + 1,
        "the body ran again exactly once"
    );
    let sent = count(&target, async {
        assert!(counted(&idem, "o-1", &runs).await.1);
    })
    .await;
    assert_eq!(sent, ["SET"], "the new outcome replays");
    assert_eq!(runs.load(Ordering::SeqCst), before + 1);
}

async fn a_server_that_does_not_know_the_scripts_costs_one_eval_each() {
    let Some((target, idem)) = target().await else {
        return;
    };
    let mut raw = target.raw().await;
    let _: () = idem_stores::redis::client::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut raw)
        .await
        .unwrap();
    let sent = count(&target, async {
        create(&idem, "cold").await.unwrap();
    })
    .await;
    assert_eq!(
        sent,
        ["SET", "EVALSHA", "EVAL"],
        "the reserve is a plain SET; for complete, EVALSHA answered NOSCRIPT and EVAL ran the script"
    );

    let sent = count(&target, async {
        assert!(create(&idem, "cold").await.unwrap().1);
    })
    .await;
    assert_eq!(sent, ["SET"], "a replay runs no script");

    let sent = count(&target, async {
        assert!(!create(&idem, "cold-2").await.unwrap().1);
    })
    .await;
    assert_eq!(sent, ["SET", "EVALSHA"], "EVAL cached the complete script");
}

/// One request per step that runs, none per step replayed from the record: the takeover's
/// reply carries the recorded steps. A takeover is the SET that finds the record, then the
/// reserve script.
async fn each_recorded_step_takes_one_round_trip() {
    let Some((target, idem)) = target().await else {
        return;
    };
    let clock = ManualClock::new();
    let idem = idem.with_clock(clock.clone());
    // Load the scripts: the server learns them from the first EVAL of each. Record_step and
    // complete from the first checkout, release from the failed one, and the reserve script
    // (which only a takeover or a reuse runs) from resuming the released record.
    Checkout::default()
        .run(&idem, "warm", Stop::Never)
        .await
        .unwrap();
    let warm = Checkout::default();
    warm.run(&idem, "warm-fail", Stop::Fail).await.unwrap_err();
    warm.run(&idem, "warm-fail", Stop::Never).await.unwrap();
    assert_eq!(
        warm.runs(),
        (1, 1),
        "the warm-up resumed the released record"
    );

    let checkout = Checkout::default();
    let sent = count(&target, async {
        let done = checkout.run(&idem, "s-1", Stop::Never).await.unwrap();
        assert_eq!(done, ("ch_1".to_owned(), 1));
    })
    .await;
    assert_eq!(
        sent,
        ["SET", "EVALSHA", "EVALSHA", "EVALSHA"],
        "two steps: reserve (SET) + one record_step each + complete"
    );

    let checkout = Checkout::default();
    let sent = count(&target, async {
        let err = checkout.run(&idem, "s-2", Stop::Fail).await.unwrap_err();
        assert!(matches!(err, Error::InvalidKey(_)), "{err:?}");
    })
    .await;
    assert_eq!(
        sent,
        ["SET", "EVALSHA", "EVALSHA"],
        "error after a step: reserve (SET) + record_step + release"
    );
    let sent = count(&target, async {
        let done = checkout.run(&idem, "s-2", Stop::Never).await.unwrap();
        assert_eq!(done, ("ch_1".to_owned(), 1), "the charge is replayed");
    })
    .await;
    assert_eq!(
        sent,
        ["SET", "EVALSHA", "EVALSHA", "EVALSHA"],
        "resuming a released record: a takeover (SET + reserve script) + one step + complete"
    );
    assert_eq!(checkout.runs(), (1, 1));

    let checkout = Arc::new(Checkout::default());
    let crashed = tokio::spawn({
        let (checkout, idem) = (checkout.clone(), idem.clone());
        async move { checkout.run(&idem, "s-3", Stop::Hang).await }
    });
    checkout.charged.acquire().await.unwrap().forget();
    crashed.abort();
    assert!(crashed.await.is_err(), "the hanging checkout was dropped");
    clock.advance(idem_core::DEFAULT_LEASE + Duration::from_secs(1));
    let sent = count(&target, async {
        let done = checkout.run(&idem, "s-3", Stop::Never).await.unwrap();
        assert_eq!(done, ("ch_1".to_owned(), 1), "the charge is replayed");
    })
    .await;
    assert_eq!(
        sent,
        ["SET", "EVALSHA", "EVALSHA", "EVALSHA"],
        "a takeover after a crash: SET + reserve script + one step + complete"
    );
    assert_eq!(checkout.runs(), (1, 1));
}

idem_tests::module_tests! {
    async each_call_takes_the_documented_round_trips,
    async replays_are_plain_sets_and_run_no_script,
    async an_expired_record_is_reused_by_the_reserve_script,
    async each_recorded_step_takes_one_round_trip,
    async a_server_that_does_not_know_the_scripts_costs_one_eval_each,
}
