//! The stored response as a binary frame: compact, versioned, and read without copying its
//! body, which a replay slices out of the stored bytes. In order:
//!
//! | bytes | what |
//! |---|---|
//! | 4 | the magic `00 69 48` (`\0iH`) and the version, 1 |
//! | 1 | flags: bits 0-1 the body (0 kept; not kept: 1 too large, 2 failed, 3 abandoned), bit 2 a request digest follows; the others 0 |
//! | 2 | the status, big-endian |
//! | 0 or 32 | the request digest |
//! | varint, pairs | the headers: their count, then each name and value as a varint length and its bytes |
//! | varint, pairs | the trailers, as the headers |
//! | varint, rest | the body's length, then the body to the frame's end (none when not kept) |
//!
//! The varints are unsigned LEB128 in their shortest form (one encoding per frame): a length
//! under 128, as a header's mostly is, takes one byte, so a header's two lengths take fewer
//! bytes than its brackets, quotes and comma take in the JSON form, and no field has a ceiling
//! of its own. A header's name is in lower case and its value UTF-8 text, each checked once
//! as the frame is read: a replay puts them on the wire as read. A frame starts with a zero
//! byte, as no JSON value does; a sealed value does too, but goes on `iS`, so a frame is never
//! taken for one.

use std::fmt::Display;
use std::ops::Range;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode};

use super::{NotAStoredResponse, NotKept, StoredBody, StoredHeaders, StoredResponse};

/// What a frame starts with, before its version.
const MAGIC: [u8; 3] = [0, b'i', b'H'];

/// The version of the frame this code writes and reads.
const VERSION: u8 = 1;

/// The flags' bits that say what became of the body.
const BODY_BITS: u8 = 0b011;

/// The flag that says a request digest follows the status.
const DIGEST_BIT: u8 = 0b100;

/// The length of a request digest.
pub(crate) const DIGEST_LEN: usize = 32;

/// Whether `outcome` is meant as a frame: it starts with a zero byte, as no JSON value does.
pub(crate) fn is_frame(outcome: &[u8]) -> bool {
    outcome.first() == Some(&0)
}

/// `response` as a frame, with the digest of the raw request it answered when there is one:
/// its size computed first, the frame is written in one allocation.
pub(crate) fn encode(
    response: &StoredResponse,
    request_digest: Option<&[u8; DIGEST_LEN]>,
) -> Bytes {
    let (body_code, body): (u8, &[u8]) = match &response.body {
        StoredBody::Kept(body) => (0, body),
        StoredBody::NotKept(why) => (not_kept_code(*why), &[]),
    };
    let len = head_len(response, request_digest.is_some(), body.len()) + body.len();
    let digest_flag = match request_digest {
        Some(_) => DIGEST_BIT,
        None => 0,
    };
    let mut frame = Vec::with_capacity(len);
    frame.extend_from_slice(&MAGIC);
    frame.push(VERSION);
    frame.push(body_code | digest_flag);
    frame.extend_from_slice(&response.status.to_be_bytes());
    if let Some(digest) = request_digest {
        frame.extend_from_slice(digest);
    }
    for pairs in [&response.headers, &response.trailers] {
        put_varint(&mut frame, pairs.len());
        for (name, value) in pairs {
            put_varint(&mut frame, name.as_str().len());
            frame.extend_from_slice(name.as_str().as_bytes());
            put_varint(&mut frame, value.len());
            frame.extend_from_slice(value.as_bytes());
        }
    }
    put_varint(&mut frame, body.len());
    frame.extend_from_slice(body);
    debug_assert_eq!(frame.len(), len, "the frame is as long as computed");
    debug_assert_eq!(frame.capacity(), len, "in the one allocation");
    Bytes::from(frame)
}

/// The request digest in the head of `frame`, read without the rest of it: `None` unless it
/// starts as a frame of this version whose flags are all known and say a digest follows.
pub(crate) fn request_digest(frame: &[u8]) -> Option<[u8; DIGEST_LEN]> {
    // The magic, the version, the flags and the status.
    let (head, rest) = frame.split_first_chunk::<{ MAGIC.len() + 4 }>()?;
    let [magic @ .., version, flags, _, _] = *head;
    let known = magic == MAGIC && version == VERSION && flags & !(BODY_BITS | DIGEST_BIT) == 0;
    if !known || flags & DIGEST_BIT == 0 {
        return None;
    }
    rest.first_chunk::<DIGEST_LEN>().copied()
}

/// The length of a frame of `response` but for its body's bytes.
fn head_len(response: &StoredResponse, digest: bool, body_len: usize) -> usize {
    let pairs_len = |pairs: &[(HeaderName, HeaderValue)]| {
        pairs
            .iter()
            .fold(varint_len(pairs.len()), |len, (name, value)| {
                let name = name.as_str().len();
                len + varint_len(name) + name + varint_len(value.len()) + value.len()
            })
    };
    MAGIC.len()
        + 1 // version
        + 1 // flags
        + 2 // status
        + if digest { DIGEST_LEN } else { 0 }
        + pairs_len(&response.headers)
        + pairs_len(&response.trailers)
        + varint_len(body_len)
}

/// The response in `frame`, and the digest of the raw request it answered if the frame has
/// one, or why `frame` is none: every length, count, flag and header is checked, and the
/// body is a slice of `frame`.
pub(crate) fn decode(
    frame: Bytes,
) -> Result<(StoredResponse, Option<[u8; DIGEST_LEN]>), NotAStoredResponse> {
    let mut reader = Reader {
        frame: &frame,
        at: 0,
    };
    if reader.bytes(MAGIC.len(), &"magic")? != MAGIC {
        return Err(refused(
            "it starts with a zero byte, as a frame does, but not with the frame's magic",
        ));
    }
    let version = reader.byte(&"version")?;
    if version != VERSION {
        let by = if version > VERSION {
            "written by a newer idem-http"
        } else {
            "which no idem-http writes"
        };
        return Err(refused(format!(
            "it is a frame of version {version}, {by}; this one reads version {VERSION}"
        )));
    }
    let flags = reader.byte(&"flags")?;
    if flags & !(BODY_BITS | DIGEST_BIT) != 0 {
        return Err(refused(format!(
            "its flags {flags:#010b} set bits this idem-http does not know"
        )));
    }
    let status = u16::from_be_bytes(reader.array(&"status")?);
    StatusCode::from_u16(status).map_err(|_| refused(format!("{status} is no HTTP status")))?;
    let request_digest = match flags & DIGEST_BIT {
        0 => None,
        _ => Some(reader.array(&"request digest")?),
    };
    let headers = reader.pairs("header")?;
    let trailers = reader.pairs("trailer")?;
    let body = reader.body()?;
    let body = match not_kept_of(flags & BODY_BITS) {
        None => StoredBody::Kept(frame.slice(body)),
        Some(_) if !body.is_empty() => {
            return Err(refused(format!(
                "its body was not kept, yet its body length is {}",
                body.len()
            )))
        }
        Some(why) => StoredBody::NotKept(why),
    };
    let response = StoredResponse {
        status,
        headers,
        body,
        trailers,
        fresh: None,
    };
    Ok((response, request_digest))
}

/// The body bits of a body not kept for `why`.
fn not_kept_code(why: NotKept) -> u8 {
    match why {
        NotKept::TooLarge => 1,
        NotKept::Failed => 2,
        NotKept::Abandoned => 3,
    }
}

/// Why the body was not kept, from the body bits; `None` when it was kept.
fn not_kept_of(code: u8) -> Option<NotKept> {
    [NotKept::TooLarge, NotKept::Failed, NotKept::Abandoned]
        .into_iter()
        .find(|why| not_kept_code(*why) == code)
}

fn refused(reason: impl Into<String>) -> NotAStoredResponse {
    NotAStoredResponse::new(reason)
}

/// `value` as an unsigned LEB128 varint, in its shortest form.
fn put_varint(frame: &mut Vec<u8>, mut value: usize) {
    while value >= 0x80 {
        frame.push(value as u8 | 0x80);
        value >>= 7;
    }
    frame.push(value as u8);
}

/// How many bytes `value` takes as a varint.
fn varint_len(value: usize) -> usize {
    let bits = usize::BITS - (value | 1).leading_zeros();
    bits.div_ceil(7) as usize
}

/// A frame read from its start: each read checks that the frame holds what it asks for, the
/// field it reads named for the error (formatted only then).
struct Reader<'a> {
    frame: &'a Bytes,
    at: usize,
}

impl Reader<'_> {
    fn left(&self) -> usize {
        self.frame.len() - self.at
    }

    /// The next `len` bytes' range, the frame's `what`.
    fn range(
        &mut self,
        len: usize,
        what: &dyn Display,
    ) -> Result<Range<usize>, NotAStoredResponse> {
        if len > self.left() {
            return Err(refused(format!(
                "it ends inside its {what}: {len} bytes from byte {}, and {} are left",
                self.at,
                self.left()
            )));
        }
        let range = self.at..self.at + len;
        self.at += len;
        Ok(range)
    }

    fn bytes(&mut self, len: usize, what: &dyn Display) -> Result<&[u8], NotAStoredResponse> {
        let range = self.range(len, what)?;
        Ok(&self.frame[range])
    }

    fn array<const N: usize>(&mut self, what: &dyn Display) -> Result<[u8; N], NotAStoredResponse> {
        let range = self.range(N, what)?;
        Ok(self.frame[range].try_into().expect("a range of N bytes"))
    }

    fn byte(&mut self, what: &dyn Display) -> Result<u8, NotAStoredResponse> {
        Ok(self.array::<1>(what)?[0])
    }

    /// An unsigned LEB128 varint, refused unless in its shortest form.
    fn varint(&mut self, what: &dyn Display) -> Result<usize, NotAStoredResponse> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte(what)?;
            if shift == 63 && byte > 1 {
                break;
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                if byte == 0 && shift > 0 {
                    return Err(refused(format!("its {what} is not in its shortest form")));
                }
                return usize::try_from(value)
                    .map_err(|_| refused(format!("its {what} of {value} is past this machine's")));
            }
        }
        Err(refused(format!("its {what} does not fit in 64 bits")))
    }

    /// Headers or trailers, `what` saying which: a count, then each pair, each name and value
    /// checked here once (a value is a slice of the frame).
    fn pairs(&mut self, what: &str) -> Result<StoredHeaders, NotAStoredResponse> {
        let count = self.varint(&format_args!("count of {what}s"))?;
        // Each pair takes three bytes at least, its two lengths and a name of one letter: a
        // count past that is refused, and room is made for a few pairs only, whatever the
        // count says (a damaged record's count must not decide an allocation).
        if count > self.left() / 3 {
            return Err(refused(format!(
                "it counts {count} {what}s, more than its {} bytes left can hold",
                self.left()
            )));
        }
        let mut pairs = Vec::with_capacity(count.min(16));
        for index in 0..count {
            let len = self.varint(&format_args!("{what} {index}'s name length"))?;
            let name = self.range(len, &format_args!("{what} {index}'s name"))?;
            // In lower case, as HTTP/2 spells it and the layer writes it: one frame per
            // response.
            let name = HeaderName::from_lowercase(&self.frame[name]).map_err(|_| {
                refused(format!(
                    "its {what} {index}'s name is no header name in lower case"
                ))
            })?;
            let len = self.varint(&format_args!("{what} {index}'s value length"))?;
            let value = self.range(len, &format_args!("{what} {index}'s value"))?;
            // A stored header is UTF-8, as in the JSON form.
            if std::str::from_utf8(&self.frame[value.clone()]).is_err() {
                return Err(refused(format!("its {what} {index} is not UTF-8")));
            }
            let value = HeaderValue::from_maybe_shared(self.frame.slice(value))
                .map_err(|_| refused(format!("its {what} {index}'s value is no header value")))?;
            pairs.push((name, value));
        }
        Ok(pairs)
    }

    /// The body's range: its length, then exactly that many bytes to the frame's end.
    fn body(&mut self) -> Result<Range<usize>, NotAStoredResponse> {
        let len = self.varint(&"body length")?;
        let body = self.range(len, &"body")?;
        if self.left() > 0 {
            return Err(refused(format!(
                "it goes on {} bytes past its body",
                self.left()
            )));
        }
        Ok(body)
    }
}

#[cfg(test)]
mod tests;
