//! The downstream's charges: every order charged at most once and under one key, and every
//! success a caller got names a charge the downstream made for that very order.

use std::collections::BTreeSet;

use super::model::{Answer, FrontRun};
use crate::check::model::CallRecord;
use crate::check::{Anomaly, Class, Found};

/// Orders charged more than once, and orders charged under more than one key.
pub(super) fn per_order(front: &FrontRun) -> Vec<Anomaly> {
    let mut found = Vec::new();
    for (order, made) in &front.charges {
        let calls: Vec<String> = made.iter().map(|charge| charge.call.clone()).collect();
        if made.len() > 1 {
            found.push(Anomaly {
                class: Class::DownstreamEffectRepeated,
                key: order.clone(),
                detail: format!("the downstream charged {order} {} times", made.len()),
                calls: calls.clone(),
            });
        }
        let keys: BTreeSet<&str> = made.iter().map(|charge| charge.key.as_str()).collect();
        if keys.len() > 1 {
            found.push(Anomaly {
                class: Class::DownstreamKeyChanged,
                key: order.clone(),
                detail: format!("the downstream was asked {order} under keys {keys:?}"),
                calls,
            });
        }
    }
    found
}

/// Every success of an endpoint that charges names a charge the downstream made for the
/// request's own order.
pub(super) fn behind_answers(
    front: &FrontRun,
    key: &str,
    requests: &[&CallRecord],
    found: &mut Found<'_>,
) {
    if !front.downstream {
        return;
    }
    let made = front.charges.get(key).map_or(&[][..], Vec::as_slice);
    for request in requests {
        let Some((answer, _)) = request.answer() else {
            continue;
        };
        let charge = Answer::of(answer).charge;
        let (charge_call, order) = charge
            .and_then(|charge| charge.split_once('@'))
            .unwrap_or_default();
        let behind = order == key && made.iter().any(|made| made.call == charge_call);
        if !behind {
            found(
                Class::ChargeMissing,
                format!(
                    "{} got {answer:?}, but the downstream made no such charge of {key} \
                     (its charges: {:?})",
                    request.id,
                    made.iter().map(|made| &made.call).collect::<Vec<_>>()
                ),
                vec![&request.id],
            );
        }
    }
}
