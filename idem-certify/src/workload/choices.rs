//! A worker's choices for each call: what to do, on which key (a hot one, an older one, or
//! one aimed at on the board), and how long its body pauses.

use std::time::Duration;

use super::{Worker, AIM_EVERY, EPOCH, HOT_KEYS, RETRY_EPOCHS};
use crate::history::{now_micros, Op};

impl Worker {
    pub(super) fn pick_op(&mut self) -> Op {
        match self.rng.u32(..100) {
            0..=21 => Op::Contend,
            22..=33 => Op::Retry,
            34..=37 => Op::Mismatch,
            38..=42 => Op::Wait,
            43..=54 => Op::Slow,
            55..=57 => Op::Stall,
            58..=61 => Op::Heedless,
            62..=71 => Op::StallAtEnd,
            72..=77 => Op::Abandon,
            78..=81 => Op::Fail,
            82..=85 => Op::FailAfterStep,
            86..=91 => Op::StepRetry,
            _ => Op::StoreErr,
        }
    }

    /// Now and then, a key listed on the board whose pause is running or just ended (a
    /// stopped process's pause may have ended while it could not go on). The key of an owner
    /// the nemesis stopped comes first, every other call, in the processes it names: it is to
    /// be taken over as soon as its lease passes.
    pub(super) fn aim(&mut self) -> Option<String> {
        let name = &self.plan.name;
        let targets: Vec<_> = (self.board.aimed().into_iter())
            .filter(|target| target.takers.is_empty() || target.takers.contains(name))
            .collect();
        if !targets.is_empty() && self.rng.bool() {
            return Some(targets[self.rng.usize(..targets.len())].key.clone());
        }
        if self.rng.u32(..AIM_EVERY) != 0 {
            return None;
        }
        let now = now_micros();
        let lease = self.plan.lease_ms * 1_000;
        let keys: Vec<String> = self
            .board
            .read()
            .into_iter()
            .filter(|(_, pause)| pause.until + lease > now)
            .map(|(_, pause)| pause.key)
            .collect();
        (!keys.is_empty()).then(|| keys[self.rng.usize(..keys.len())].clone())
    }

    pub(super) fn pick_key(&mut self, op: Op) -> String {
        let epoch = now_micros() / EPOCH.as_micros() as u64;
        // Other arguments go to keys of a few seconds ago, most of them answered by now: on a
        // fresh key they would claim it, and every caller after them would be refused.
        // Half the retries come a second later, when a stalled first call's lease passes:
        // they take its key over while it may still complete.
        let epoch = match op {
            Op::Retry if self.rng.bool() => epoch.saturating_sub(1),
            Op::Retry | Op::Mismatch => epoch.saturating_sub(self.rng.u64(1..=RETRY_EPOCHS)),
            _ => epoch,
        };
        format!("k{epoch}-{}", self.rng.u64(..HOT_KEYS))
    }

    /// How long the body pauses between its steps (after them for [`Op::StallAtEnd`]; before
    /// its effect without steps). On a slow function's key, a body that takes over stays in
    /// progress long enough for the owner it took the key from to wake and renew.
    pub(super) fn pause(&mut self, op: Op, lease: Duration, slow_function: bool) -> Duration {
        match op {
            // Long enough that a stop or a cut of one to two leases can end mid-pause: the
            // renewal that follows then races the takeover made meanwhile.
            Op::Slow => lease * 3 + Duration::from_millis(self.rng.u64(..lease.as_millis() as u64)),
            // Half the time a body that does not renew writes its next step in the last
            // quarter of its lease: by its own clock it still holds the key, by a faster
            // clock's the lease has passed, and a retry aimed at it may have taken it over.
            // The store must refuse that step's write.
            Op::Stall | Op::Heedless if self.rng.bool() => {
                lease - Duration::from_millis(self.rng.u64(..lease.as_millis() as u64 / 4))
            }
            Op::Stall | Op::Heedless => lease * 3 / 2,
            // Wakes just past its lease, while a caller that took the key over may still run.
            Op::StallAtEnd => lease + Duration::from_millis(self.rng.u64(..500)),
            Op::Abandon => lease * 2,
            _ if slow_function => lease / 2 + Duration::from_millis(self.rng.u64(..500)),
            _ => Duration::from_millis(self.rng.u64(..100)),
        }
    }
}
