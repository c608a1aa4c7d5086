//! The stored response's JSON form, its serde form: what the layer has always written, read
//! back as it always was. The body is text when it is UTF-8 that escaping makes no longer than
//! base64 would, else base64; either way it is read back into bytes.

use std::borrow::Cow;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderName, HeaderValue};
use serde::ser::{self, SerializeSeq};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

use super::{text, NotKept, StoredBody, StoredHeaders, StoredResponse};

/// The JSON form's fields as written, in order, borrowed from the response.
#[derive(Serialize)]
struct Written<'a> {
    status: u16,
    headers: Pairs<'a>,
    body: FormBody<'a>,
    /// Left out when there are none.
    #[serde(skip_serializing_if = "no_pairs")]
    trailers: Pairs<'a>,
}

/// The JSON form's fields as read.
#[derive(Deserialize)]
struct Read<'a> {
    status: u16,
    headers: Vec<(String, String)>,
    body: FormBody<'a>,
    #[serde(default)]
    trailers: Vec<(String, String)>,
}

/// Headers or trailers written as `[name, value]` arrays of strings.
struct Pairs<'a>(&'a [(HeaderName, HeaderValue)]);

impl Serialize for Pairs<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for (name, value) in self.0 {
            if std::str::from_utf8(value.as_bytes()).is_err() {
                return Err(ser::Error::custom(format!(
                    "the {name} header is not UTF-8"
                )));
            }
            seq.serialize_element(&(name.as_str(), text(value)))?;
        }
        seq.end()
    }
}

/// `pairs` as read, each checked as a header once.
fn stored_headers(pairs: Vec<(String, String)>) -> Result<StoredHeaders, String> {
    pairs
        .into_iter()
        .map(|(name, value)| {
            let name = HeaderName::try_from(name).map_err(|e| format!("stored header: {e}"))?;
            let value =
                HeaderValue::try_from(value).map_err(|e| format!("stored {name} header: {e}"))?;
            Ok((name, value))
        })
        .collect()
}

/// The body in the JSON form.
#[derive(Serialize, Deserialize)]
enum FormBody<'a> {
    #[serde(rename = "text")]
    Text(Cow<'a, str>),
    #[serde(rename = "base64")]
    Base64(Cow<'a, str>),
    #[serde(rename = "not_kept")]
    NotKept(NotKept),
}

fn no_pairs(pairs: &Pairs<'_>) -> bool {
    pairs.0.is_empty()
}

impl<'a> FormBody<'a> {
    /// How `body` is written: text when that is no longer than base64.
    fn of(body: &'a StoredBody) -> Self {
        match body {
            StoredBody::Kept(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) if !costly_to_escape(text) => FormBody::Text(Cow::Borrowed(text)),
                _ => FormBody::Base64(Cow::Owned(BASE64.encode(bytes))),
            },
            StoredBody::NotKept(why) => FormBody::NotKept(*why),
        }
    }

    /// The body this form holds, base64 decoded.
    fn into_body(self) -> Result<StoredBody, String> {
        Ok(match self {
            FormBody::Text(text) => StoredBody::Kept(Bytes::from(text.into_owned())),
            FormBody::Base64(encoded) => StoredBody::Kept(Bytes::from(
                BASE64
                    .decode(encoded.as_bytes())
                    .map_err(|e| format!("stored body is not base64: {e}"))?,
            )),
            FormBody::NotKept(why) => StoredBody::NotKept(why),
        })
    }
}

impl Serialize for StoredResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Written {
            status: self.status,
            headers: Pairs(&self.headers),
            body: FormBody::of(&self.body),
            trailers: Pairs(&self.trailers),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for StoredResponse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let form = Read::deserialize(deserializer)?;
        Ok(StoredResponse {
            status: form.status,
            headers: stored_headers(form.headers).map_err(de::Error::custom)?,
            body: form.body.into_body().map_err(de::Error::custom)?,
            trailers: stored_headers(form.trailers).map_err(de::Error::custom)?,
            fresh: None,
        })
    }
}

/// Whether `text`, escaped for the JSON record, would take more room than in base64: control
/// characters take six bytes each there.
pub(super) fn costly_to_escape(text: &str) -> bool {
    let escaped: usize = text
        .bytes()
        .map(|byte| match byte {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum();
    escaped > text.len().div_ceil(3) * 4
}

#[cfg(test)]
mod tests;
