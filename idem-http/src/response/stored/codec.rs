//! How the layer's engine stores a response: written as a frame, read back in either form, so
//! that records stored as JSON before the frame still replay.

use bytes::Bytes;
use idem_core::{BoxError, OutcomeCodec};

use super::{frame, StoredResponse};

/// The layer's outcome codec: a response is stored as its frame (no request digest yet), and
/// a stored outcome read as a frame or as the JSON form ([`StoredResponse::from_outcome`]),
/// the frame's body a slice of the stored bytes.
pub(crate) struct FrameCodec;

impl OutcomeCodec<StoredResponse> for FrameCodec {
    fn encode(&self, response: &StoredResponse) -> Result<Bytes, BoxError> {
        Ok(frame::encode(response, None))
    }

    fn decode(&self, outcome: Bytes) -> Result<StoredResponse, BoxError> {
        Ok(StoredResponse::from_outcome(outcome)?)
    }
}
