//! What the layer answers: its problem documents, which statuses are
//! stored, the stored responses and their replay (with its limits and the response hook), and
//! the streaming of a handler's response to its client.

pub(crate) mod forward;
pub(crate) mod hook;
pub mod problem;
pub(crate) mod replay_limits;
pub(crate) mod statuses;
pub(crate) mod stored;
