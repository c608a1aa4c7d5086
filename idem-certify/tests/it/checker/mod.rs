//! The checker on hand-written histories, one file per rule: each class found where the
//! contract breaks, and nothing found where a takeover is allowed.

mod answers;
mod concurrent_bodies;
mod false_alarms;
mod fencing;
mod front;
mod front_replies;
mod recorded_steps;
mod stale_owners;
mod stale_writes;
