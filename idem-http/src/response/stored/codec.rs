//! How the layer's engine stores a response: written as a frame, read back in either form, so
//! that records stored as JSON before the frame still replay.

use bytes::Bytes;
use idem_core::{BoxError, Fingerprint, OutcomeCodec};

use super::{frame, StoredResponse};

/// The layer's outcome codec: a response is stored as its frame, with the digest of the
/// request it answered when the call has one, and a stored outcome read as a frame or as the
/// JSON form ([`StoredResponse::from_outcome`]), the frame's body a slice of the stored bytes.
pub(crate) struct FrameCodec;

impl OutcomeCodec<StoredResponse> for FrameCodec {
    fn encode(&self, response: &StoredResponse) -> Result<Bytes, BoxError> {
        Ok(frame::encode(response, None))
    }

    fn encode_for(
        &self,
        response: &StoredResponse,
        request: &Fingerprint,
    ) -> Result<Bytes, BoxError> {
        Ok(frame::encode(response, Some(request.as_bytes())))
    }

    /// The digest in a frame's head; none in a record of the JSON form, or a frame without.
    fn request_digest(&self, outcome: &Bytes) -> Option<Fingerprint> {
        frame::request_digest(outcome).map(Fingerprint::from_bytes)
    }

    fn decode(&self, outcome: Bytes) -> Result<StoredResponse, BoxError> {
        Ok(StoredResponse::from_outcome(outcome)?)
    }
}
