//! The error of reading bytes that are no stored response: the same for each of its forms.

use std::fmt;

/// Bytes that are no response stored by the layer: some other value, or a damaged one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotAStoredResponse(String);

impl NotAStoredResponse {
    /// Why the bytes are no stored response, in words.
    pub(crate) fn new(reason: impl Into<String>) -> Self {
        NotAStoredResponse(reason.into())
    }
}

impl fmt::Display for NotAStoredResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a response stored by idem-http: {}", self.0)
    }
}

impl std::error::Error for NotAStoredResponse {}
