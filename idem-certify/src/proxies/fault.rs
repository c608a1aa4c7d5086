//! The network faults a proxy makes, and what each does to the bytes of one direction.

use std::time::Duration;

/// The network faults a proxy injects: what a network does, and nothing else. A connection's
/// bytes arrive in order, late or not at all; when some will never arrive, the connection is
/// closed. No fault drops bytes from a connection it leaves open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetFault {
    /// Every byte delayed by about a quarter of the lease, both ways, in order.
    Latency,
    /// Nothing gets through either way while it lasts; a connection that had bytes held is
    /// closed when it ends, as one whose peer stopped answering times out.
    Stall,
    /// Each connection is reset after a few hundred more bytes toward the store: requests
    /// broken off mid-way.
    Cut,
    /// Requests reach the store, which acts on them; its answers are held, and the connection
    /// closed when the fault ends (one-way silence that ends in a close).
    DropAnswers,
    /// Connections are refused: those open are closed at once, new ones closed on arrival.
    Refuse,
}

impl NetFault {
    /// Every network fault.
    pub const ALL: [NetFault; 5] = [
        NetFault::Latency,
        NetFault::Stall,
        NetFault::Cut,
        NetFault::DropAnswers,
        NetFault::Refuse,
    ];

    /// Its name in the report.
    pub fn name(self) -> &'static str {
        match self {
            NetFault::Latency => "net-latency",
            NetFault::Stall => "net-stall",
            NetFault::Cut => "net-cut",
            NetFault::DropAnswers => "net-drop-answers",
            NetFault::Refuse => "net-refuse",
        }
    }

    /// The fault as a proxy applies it, scaled by `lease_ms`.
    pub(crate) fn active(self, lease_ms: u64, rng: &mut fastrand::Rng) -> Active {
        match self {
            NetFault::Latency => Active::Latency {
                base: Duration::from_millis(lease_ms / 4),
                jitter_ms: lease_ms / 8,
            },
            NetFault::Stall => Active::Stall,
            NetFault::Cut => Active::Cut {
                bytes: rng.u64(40..400),
            },
            NetFault::DropAnswers => Active::DropAnswers,
            NetFault::Refuse => Active::Refuse,
        }
    }
}

/// The fault a proxy applies now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Active {
    Clear,
    Latency { base: Duration, jitter_ms: u64 },
    Stall,
    Cut { bytes: u64 },
    DropAnswers,
    Refuse,
}

/// Which way bytes go through a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// From the client toward the store.
    ToStore,
    /// From the store back to the client.
    ToClient,
}

/// What a fault does to a chunk going one way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Delivered now.
    Pass,
    /// Delivered once it has been on its way this long.
    Delay(Duration),
    /// Held until the fault ends; then the connection closes.
    Hold,
    /// Delivered up to this many bytes since the fault began; then the connection closes.
    CutAfter(u64),
    /// The connection closes now.
    Close,
}

impl Active {
    /// What this fault does to a chunk going `direction`.
    pub(crate) fn effect(self, direction: Direction, rng: &mut fastrand::Rng) -> Effect {
        match (self, direction) {
            (Active::Clear, _) => Effect::Pass,
            (Active::Latency { base, jitter_ms }, _) => {
                Effect::Delay(base + Duration::from_millis(rng.u64(..=jitter_ms)))
            }
            (Active::Stall, _) => Effect::Hold,
            (Active::Cut { bytes }, Direction::ToStore) => Effect::CutAfter(bytes),
            (Active::Cut { .. }, Direction::ToClient) => Effect::Pass,
            (Active::DropAnswers, Direction::ToStore) => Effect::Pass,
            (Active::DropAnswers, Direction::ToClient) => Effect::Hold,
            (Active::Refuse, _) => Effect::Close,
        }
    }
}

/// The fault in force, and which injection or heal set it: a link that held bytes under one
/// closes when it changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Epoch {
    pub(crate) active: Active,
    pub(crate) generation: u64,
}
