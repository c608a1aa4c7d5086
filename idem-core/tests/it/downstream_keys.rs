//! The keys a body sends downstream: the same in every attempt, takeover and process of a call,
//! different per operation, call and principal, revealing nothing of the call, and valid
//! `Idempotency-Key` values.

use std::sync::Arc;

use idem_conformance::ReferenceStore;
use idem_core::store::Store;
use idem_core::{
    context, downstream_key, next_downstream_key, step, step_downstream_key, Call, Error,
    Fingerprint, Idempotency, ManualClock,
};

use crate::support::LEASE;

/// The keys one attempt of a call's body takes, in order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Taken {
    named: String,
    named_again: String,
    other_operation: String,
    in_step: Vec<String>,
    next_in_call: Vec<String>,
}

/// The keys of one attempt of the call `order` of `scope` under `idem`.
async fn body_keys() -> Result<Taken, Error> {
    let named = downstream_key("charge").expect("inside a call").to_string();
    let named_again = downstream_key("charge").unwrap().to_string();
    let other_operation = downstream_key("refund").unwrap().to_string();
    let in_step = step("charge", async {
        Ok::<_, Error>(vec![
            step_downstream_key().expect("inside a step").to_string(),
            step_downstream_key().unwrap().to_string(),
        ])
    })
    .await?;
    let next_in_call = vec![
        next_downstream_key("POST /charges").unwrap().to_string(),
        next_downstream_key("POST /charges").unwrap().to_string(),
    ];
    Ok(Taken {
        named,
        named_again,
        other_operation,
        in_step,
        next_in_call,
    })
}

fn call(idem: &Idempotency, order: &str, scope: Option<&str>) -> Call {
    let key = idem
        .key("shop.checkout")
        .scope(scope)
        .part(order)
        .finish()
        .unwrap();
    Call::new(key, Fingerprint::of(&(order, 1_000)).unwrap()).with_lease(LEASE)
}

async fn keys_of(idem: &Idempotency, order: &str, scope: Option<&str>) -> Taken {
    idem.run(call(idem, order, scope), body_keys())
        .await
        .unwrap_or_else(|error| panic!("the call: {error}"))
        .value
}

#[tokio::test]
async fn outside_a_call_there_is_no_downstream_key() {
    assert_eq!(downstream_key("charge"), None);
    assert_eq!(next_downstream_key("charge"), None);
    assert_eq!(step_downstream_key(), None);
    let in_a_bare_step = step("charge", async {
        Ok::<_, Error>(step_downstream_key().map(String::from))
    })
    .await
    .unwrap();
    assert_eq!(
        in_a_bare_step, None,
        "a step outside a call is no step of one"
    );
}

#[tokio::test]
async fn a_name_gives_one_key_and_numbered_uses_give_one_each() {
    let idem = Idempotency::new(ReferenceStore::new());
    let taken = keys_of(&idem, "order-42", None).await;
    assert_eq!(taken.named, taken.named_again, "one name, one key");
    let mut all = vec![taken.named.clone(), taken.other_operation.clone()];
    all.extend(taken.in_step.iter().cloned());
    all.extend(taken.next_in_call.iter().cloned());
    let distinct: std::collections::HashSet<_> = all.iter().collect();
    assert_eq!(
        distinct.len(),
        all.len(),
        "every operation its own: {all:?}"
    );
}

#[tokio::test]
async fn keys_differ_per_call_and_per_principal() {
    let idem = Idempotency::new(ReferenceStore::new());
    let base = keys_of(&idem, "order-42", Some("alice")).await;
    let other_order = keys_of(&idem, "order-43", Some("alice")).await;
    let other_principal = keys_of(&idem, "order-42", Some("bob")).await;
    let unscoped = keys_of(&idem, "order-42", None).await;
    for other in [&other_order, &other_principal, &unscoped] {
        assert_ne!(base.named, other.named);
        assert_ne!(base.in_step, other.in_step);
        assert_ne!(base.next_in_call, other.next_in_call);
    }
    let namespaced = Idempotency::new(ReferenceStore::new()).with_namespace("billing");
    assert_ne!(
        keys_of(&namespaced, "order-42", Some("alice")).await.named,
        base.named,
        "another service's call is another call"
    );
}

#[tokio::test]
async fn keys_reveal_nothing_and_fit_the_key_grammar() {
    let idem = Idempotency::new(ReferenceStore::new());
    let taken = keys_of(&idem, "order-42", Some("alice")).await;
    let call_key = call(&idem, "order-42", Some("alice")).key().clone();
    for key in [&taken.named, &taken.in_step[0], &taken.next_in_call[0]] {
        for secret in [
            "order-42",
            "42",
            "alice",
            "shop",
            "checkout",
            "charge",
            call_key.as_str(),
        ] {
            assert!(!key.contains(secret), "{secret} in {key}");
        }
        assert_eq!(
            idem_protocol::key::parse(key.as_bytes()).as_deref(),
            Ok(key.as_str()),
            "a bare token of the Idempotency-Key grammar"
        );
        assert!(key.starts_with(idem_core::DOWNSTREAM_KEY_PREFIX));
        assert!(key.len() <= 64, "{key} fits the strictest providers");
        assert!(key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
    }
}

/// The keys of attempt 1 (dropped mid-body, as a process that died) and attempt 2 (a retry
/// that took the key over once the lease passed), each under a handle of its own on one store.
async fn keys_across_a_takeover(first: Idempotency, second: Idempotency, clock: &ManualClock) {
    let (seen, heard) = tokio::sync::oneshot::channel();
    let abandoned = first.run(call(&first, "order-42", Some("alice")), async move {
        let attempt = context().unwrap().attempt();
        let taken = body_keys().await?;
        let _ = seen.send((attempt, taken));
        std::future::pending::<Result<(), Error>>().await
    });
    let (attempt, taken) = tokio::select! {
        _ = abandoned => panic!("the first attempt never ends"),
        heard = heard => heard.expect("the first attempt took its keys"),
    };
    assert_eq!(attempt, 1);
    clock.advance(LEASE * 3);
    let (again_attempt, again) = second
        .run(call(&second, "order-42", Some("alice")), async {
            let attempt = context().unwrap().attempt();
            Ok::<_, Error>((attempt, body_keys().await?))
        })
        .await
        .unwrap_or_else(|error| panic!("the takeover: {error}"))
        .value;
    assert_eq!(again_attempt, 2, "a takeover, not a fresh call");
    // The step was recorded in attempt 1: it replays, so its keys are attempt 1's.
    assert_eq!(again, taken, "the same keys in both attempts");
}

fn shared_store() -> Arc<dyn Store> {
    Arc::new(ReferenceStore::new())
}

#[tokio::test]
async fn keys_are_the_same_after_a_takeover_in_another_process() {
    let (clock, store) = (ManualClock::new(), shared_store());
    let handle = || Idempotency::from_arc(store.clone()).with_clock(clock.clone());
    keys_across_a_takeover(handle(), handle(), &clock).await;
}

#[tokio::test]
async fn a_step_that_runs_again_after_a_takeover_takes_the_same_keys() {
    let (clock, store) = (ManualClock::new(), shared_store());
    let handle = || Idempotency::from_arc(store.clone()).with_clock(clock.clone());
    let (first, second) = (handle(), handle());
    let step_keys = || {
        step("charge", async {
            let keys = vec![
                step_downstream_key().unwrap().to_string(),
                step_downstream_key().unwrap().to_string(),
            ];
            assert_eq!(context().unwrap().attempt(), 2, "a takeover");
            Ok::<_, Error>(keys)
        })
    };
    // Attempt 1 takes the step's keys and dies inside the step, before it is recorded.
    let (seen, heard) = tokio::sync::oneshot::channel();
    let abandoned = first.run(call(&first, "order-42", None), async move {
        step("charge", async {
            let keys = vec![
                step_downstream_key().unwrap().to_string(),
                step_downstream_key().unwrap().to_string(),
            ];
            let _ = seen.send(keys);
            std::future::pending::<Result<Vec<String>, Error>>().await
        })
        .await
    });
    let taken = tokio::select! {
        _ = abandoned => panic!("the first attempt never ends"),
        heard = heard => heard.expect("the first attempt took its keys"),
    };
    clock.advance(LEASE * 3);
    let again = second
        .run(call(&second, "order-42", None), step_keys())
        .await
        .unwrap_or_else(|error| panic!("the takeover: {error}"))
        .value;
    assert_eq!(again, taken, "the step ran again with the same keys");
}

#[cfg(feature = "seal")]
mod keyed {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";
    const OTHER: &[u8] = b"fedcba9876543210fedcba9876543210";

    #[tokio::test]
    async fn under_a_digest_secret_keys_are_keyed_by_it_and_still_stable() {
        let (clock, store) = (ManualClock::new(), shared_store());
        let handle = |secret: &[u8]| {
            Idempotency::from_arc(store.clone())
                .with_clock(clock.clone())
                .with_key_digest(secret)
        };
        keys_across_a_takeover(handle(SECRET), handle(SECRET).name_keys_by_digest(), &clock).await;
        let unkeyed = keys_of(&Idempotency::new(ReferenceStore::new()), "o-1", None).await;
        let keyed = keys_of(&handle(SECRET), "o-1", None).await;
        let other_secret = keys_of(&handle(OTHER), "o-1", None).await;
        assert_ne!(
            keyed.named, unkeyed.named,
            "no one without the secret has it"
        );
        assert_ne!(keyed.named, other_secret.named);
    }
}
