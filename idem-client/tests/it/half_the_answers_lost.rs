//! The default policy through a proxy that loses half the answers, for 200 sends: the policy's
//! time budget holds enough attempts that a send is lost only when more answers in a row are
//! lost than 200 sends at that rate can expect, and each order is charged once.

use crate::support;

use std::time::Duration;

use idem_client::{
    was_replayed, IdempotentRetry, SendError, DEFAULT_INITIAL_BACKOFF, DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_BACKOFF, DEFAULT_MAX_ELAPSED,
};
use idem_test_servers::proxy::Proxy;
use support::client;
use support::server::Shop;

const SENDS: usize = 200;
/// The share of answers the proxy loses.
const LOSS: f64 = 0.5;
/// The seed of the losses: the same run every time.
const SEED: u64 = 0x1de3_0063;
/// What the proxy's attempts, all of them failing at once, may take together at most: time
/// the budget does not leave to the waits.
const ATTEMPTS_TAKE_AT_MOST: Duration = Duration::from_secs(2);

/// The attempts the default policy makes at least when each fails at once: the first, then
/// one after each wait of the backoff, drawn at its longest, that still starts within
/// [`DEFAULT_MAX_ELAPSED`].
fn attempts_within_budget() -> u32 {
    let budget = DEFAULT_MAX_ELAPSED - ATTEMPTS_TAKE_AT_MOST;
    let (mut attempts, mut waited, mut step) = (1, Duration::ZERO, DEFAULT_INITIAL_BACKOFF);
    while attempts < DEFAULT_MAX_ATTEMPTS && waited + step <= budget {
        waited += step;
        attempts += 1;
        step = (step * 2).min(DEFAULT_MAX_BACKOFF);
    }
    attempts
}

/// The fewest attempts `k` for which `SENDS` sends at `LOSS` expect to lose less than one:
/// `SENDS * LOSS^k < 1`.
fn attempts_needed() -> u32 {
    let mut k = 1;
    while SENDS as f64 * LOSS.powi(k as i32) >= 1.0 {
        k += 1;
    }
    k
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_policy_outlasts_half_the_answers_lost_for_200_sends() {
    let needed = attempts_needed();
    let budget = attempts_within_budget();
    // The arithmetic: 200 sends at 50% expect to lose 200 / 2^k; the budget must hold k = 8
    // attempts for that to be under one. A count of 5 held 5 and expected to lose 6.25.
    assert_eq!(needed, 8);
    assert!(
        budget >= needed,
        "the default policy makes {budget} attempts at least; {SENDS} sends at {LOSS} loss \
         need {needed} to expect to lose less than one"
    );

    // Each key's lost answers in a row, drawn as a proxy losing each answer at `LOSS` would
    // lose them; a send ends at its first answer, so the draws after it never matter.
    let mut rng = fastrand::Rng::with_seed(SEED);
    let lost_in_a_row: Vec<usize> = (0..SENDS)
        .map(|_| (0..).take_while(|_| rng.f64() < LOSS).count())
        .collect();
    let beyond_the_budget = lost_in_a_row
        .iter()
        .filter(|&&n| n >= needed as usize)
        .count();
    // The run is one a count of 5 attempts loses sends on; and no more than the arithmetic
    // expects (0.78) are lost beyond 8 attempts.
    assert!(
        lost_in_a_row
            .iter()
            .any(|&n| (5..needed as usize).contains(&n)),
        "{lost_in_a_row:?}"
    );
    assert!(beyond_the_budget <= 1, "{lost_in_a_row:?}");

    let shop = Shop::open().await;
    let proxy = Proxy::watching(shop.addr, shop.clone()).await;
    let key = |i: usize| format!("order-{i}");
    proxy.lose_answers_by_key(lost_in_a_row.iter().enumerate().map(|(i, &n)| (key(i), n)));
    let client = client(IdempotentRetry::default());
    let sends = (0..SENDS).map(|i| {
        let (client, url) = (client.clone(), format!("{}/payments", proxy.url));
        tokio::spawn(async move {
            client
                .post(url)
                .header("idempotency-key", key(i))
                .header("content-type", "application/json")
                .body(format!(r#"{{"order":"o_{i}","amount":1250}}"#))
                .send()
                .await
        })
    });
    let mut delivered = 0;
    for (i, send) in sends.collect::<Vec<_>>().into_iter().enumerate() {
        let lost = lost_in_a_row[i];
        match send.await.unwrap() {
            Ok(response) => {
                assert_eq!(response.status(), 201, "order {i}");
                assert_eq!(was_replayed(&response), lost > 0, "order {i}");
                delivered += 1;
            }
            Err(error) => {
                let failed = SendError::of(&error).expect("a keyed send's error");
                assert!(
                    lost >= budget as usize,
                    "order {i} given up after {} attempts with {lost} answers lost in a row: \
                     the default policy makes {budget} at least",
                    failed.attempts()
                );
            }
        }
    }
    let expected = SENDS - beyond_the_budget;
    assert!(
        delivered >= expected,
        "{delivered} of {SENDS} sends got their answer; the policy's arithmetic says at \
         least {expected} (all but those that lost {needed}+ answers in a row: {lost_in_a_row:?})"
    );
    assert_eq!(shop.runs(), SENDS, "each order charged once");
}
