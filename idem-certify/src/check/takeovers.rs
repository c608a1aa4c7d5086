//! The rules of a takeover: the taker's fencing token is above the owner's, and the owner,
//! once it could know, performs no effect and hears that its outcome does not count.

use super::model::{CallRecord, Run};
use super::{Anomaly, Class, Found};
use crate::history::Op;

/// A body, as the takeover rules read it: the call, when it began and stopped, its token.
type Ran<'a> = (&'a CallRecord, u64, u64, u64);

fn ran<'a>(run: &Run, calls: &[&'a CallRecord]) -> Vec<Ran<'a>> {
    calls
        .iter()
        .filter_map(|call| {
            call.body
                .map(|(start, _, fencing)| (*call, start, run.body_stopped(call), fencing))
        })
        .collect()
}

/// Bodies of one key whose fencing token is not above their predecessor's. A body of attempt
/// n > 1 took over the record of the latest body of attempt n - 1 that began before it. A body
/// of attempt 1 follows the latest body that began before it: when that one is attempt 1 too
/// and had stopped first, the later one's reservation found no record (a release, an expiry)
/// and may keep the lower token its own clock proposed (allowed, returned apart); when that
/// one is a later attempt, it took over the attempt-1 body, which was reserved first and
/// began late (its process stopped between the reservation and its body): the order to judge
/// is the reservations'. Any other regression is an anomaly: a takeover's token must be above
/// the owner's, whatever the clocks say.
pub(super) fn fencing(
    run: &Run,
    key: &str,
    calls: &[&CallRecord],
    found: &mut Found<'_>,
) -> Vec<Anomaly> {
    let mut bodies = ran(run, calls);
    bodies.sort_by_key(|&(call, start, _, fencing)| (start, fencing, call.id.clone()));
    let attempt = |call: &CallRecord| call.body.map_or(0, |(_, attempt, _)| attempt);
    let mut allowed = Vec::new();
    for (index, &(later, later_start, _, later_token)) in bodies.iter().enumerate() {
        let before = &bodies[..index];
        let predecessor = match attempt(later) {
            1 => before.last(),
            n => before
                .iter()
                .rev()
                .find(|&&(earlier, ..)| attempt(earlier) + 1 == n),
        };
        let Some(&(earlier, _, earlier_stop, earlier_token)) = predecessor else {
            continue;
        };
        if later_token > earlier_token {
            continue;
        }
        if attempt(later) == 1 && attempt(earlier) > 1 {
            continue;
        }
        let detail = format!(
            "{} (attempt {}) began after {} (attempt {}) with fencing token {later_token} <= \
             {earlier_token}",
            later.id,
            attempt(later),
            earlier.id,
            attempt(earlier)
        );
        let ids = vec![earlier.id.as_str(), later.id.as_str()];
        if attempt(later) == 1 && earlier_stop <= later_start {
            allowed.push(Anomaly {
                class: Class::FencingTokenRegressed,
                key: key.to_owned(),
                detail,
                calls: ids.into_iter().map(str::to_owned).collect(),
            });
        } else {
            found(Class::FencingTokenRegressed, detail, ids);
        }
    }
    allowed
}

/// An owner whose key was taken over while its body ran (by a body with a higher token):
/// excused for its effects only while it could not have known, and, if it ended, told that
/// its outcome did not count. An outcome accepted anyway, or a step it performed after the
/// takeover and had recorded, is [`Class::StaleWriteAccepted`].
pub(super) fn stale_owners(run: &Run, calls: &[&CallRecord], found: &mut Found<'_>) {
    let bodies = ran(run, calls);
    for &(owner, start, stop, token) in &bodies {
        let until = owner.ended_at().unwrap_or(stop).max(stop);
        let Some((taken, taker)) = bodies
            .iter()
            .filter(|&&(_, theirs, their_stop, their_token)| {
                their_token > token && theirs < until && start < their_stop
            })
            .map(|&(taker, theirs, _, _)| (theirs, taker))
            .min_by_key(|&(theirs, taker)| (theirs, taker.id.clone()))
        else {
            continue;
        };
        let ids = vec![owner.id.as_str(), taker.id.as_str()];
        // A step whose effect came after the taker's reservation was written after it too:
        // the store must have refused it.
        let recorded_late = owner.steps_done.iter().find(|(step, _)| {
            owner
                .effects
                .iter()
                .any(|(name, _, t)| name == step && *t > taken)
        });
        if let Some((step, _)) = recorded_late {
            found(
                Class::StaleWriteAccepted,
                format!(
                    "{} recorded step {step}, performed after {} took its key over",
                    owner.id, taker.id
                ),
                ids.clone(),
            );
        }
        // A body that never looks at its lease can't be held to what it could know.
        let looks = owner.op != Some(Op::Heedless);
        if let Some((step, _, t)) = owner
            .effects
            .iter()
            .find(|&&(_, _, t)| looks && t > taken && run.could_know(owner, taken, t))
        {
            found(
                Class::StaleOwnerNotTold,
                format!(
                    "{} performed {step} {} ms after {} took its key over, when it could know",
                    owner.id,
                    (t - taken) / 1_000,
                    taker.id
                ),
                ids.clone(),
            );
        }
        let untold = match owner.error_class() {
            Some("Failed") => false,
            Some(_) => !run.told(owner),
            None => false,
        };
        if untold {
            found(
                Class::StaleOwnerNotTold,
                format!(
                    "{} ended {:?} without being told that {} took its key over",
                    owner.id,
                    owner.error_class().unwrap_or_default(),
                    taker.id
                ),
                ids,
            );
        }
    }
}
