//! The scripts' replies as values, and what they stand for.

use idem_core::store::{check_record_len, judge_oversized, Timestamp};
use idem_core::{
    store::{Bytes, Claim, InProgress, Outcome, OwnerToken, Record, Reservation},
    Fingerprint, StoreError,
};
use redis::Value;

use super::codec;

/// The `outcome` field of a stored outcome: `ok`, `err` or `aborted`.
pub(crate) fn outcome_tag(outcome: &Outcome) -> Result<&'static str, StoreError> {
    match outcome {
        Outcome::Ok(_) => Ok("ok"),
        Outcome::Err(_) => Ok("err"),
        Outcome::Aborted => Ok("aborted"),
        other => Err(StoreError::rejected(format!(
            "this version of the Redis store cannot hold the outcome {other:?}"
        ))),
    }
}

/// What a script answered. Records come as their stored value, in the buffer they were read
/// into.
#[derive(Debug)]
pub(crate) enum Reply {
    /// `{'ok'}`
    Ok,
    /// `{'lost'}`: the record is not held by the owner.
    Lost,
    /// `{'reserved'}`
    Reserved,
    /// `{'took_over', previous, record}`: the record written over `previous`'s.
    TookOver { previous: String, record: Bytes },
    /// `{'held', record}`: the caller's own record, written by an earlier attempt of the
    /// request.
    Held(Bytes),
    /// `{'existing', record}`
    Existing(Bytes),
    /// `{'too_long', length, fingerprint, expires_at}`: a completed record over the call's
    /// limit, not read but for its head (absent when the head is not a record's).
    TooLong {
        length: u64,
        head: Option<(String, String)>,
    },
}

/// Decodes a script's reply; `{'corrupt', reason}` and anything unexpected are errors.
pub(crate) fn reply(value: Value) -> Result<Reply, StoreError> {
    let Value::Array(items) = value else {
        return Err(unexpected(&value));
    };
    reply_of(items)
}

fn reply_of(mut items: Vec<Value>) -> Result<Reply, StoreError> {
    let tag = match items.first() {
        Some(Value::BulkString(tag)) => tag.clone(),
        Some(Value::SimpleString(tag)) => tag.clone().into_bytes(),
        _ => return Err(unexpected(&Value::Array(items))),
    };
    match (tag.as_slice(), items.len()) {
        (b"ok", 1) => Ok(Reply::Ok),
        (b"lost", 1) => Ok(Reply::Lost),
        (b"reserved", 1) => Ok(Reply::Reserved),
        (b"took_over", 3) => {
            let record = shared(items.pop().unwrap_or(Value::Nil))?;
            let previous = text(items.pop(), "previous owner")?;
            Ok(Reply::TookOver { previous, record })
        }
        (b"held", 2) => Ok(Reply::Held(shared(items.pop().unwrap_or(Value::Nil))?)),
        (b"existing", 2) => Ok(Reply::Existing(shared(items.pop().unwrap_or(Value::Nil))?)),
        (b"too_long", 2 | 4) => {
            let head = match items.len() {
                4 => {
                    let expires_at = text(items.pop(), "expiry")?;
                    Some((text(items.pop(), "fingerprint")?, expires_at))
                }
                _ => None,
            };
            match items.pop() {
                Some(Value::Int(length)) => Ok(Reply::TooLong {
                    length: length.max(0) as u64,
                    head,
                }),
                other => Err(unexpected(&other.unwrap_or(Value::Nil))),
            }
        }
        (b"corrupt", 2) => Err(StoreError::Corrupt(text(items.pop(), "reason")?)),
        _ => Err(unexpected(&Value::Array(items))),
    }
}

/// The refusal of a completed record `length` bytes long, which a script measured over
/// `claim`'s limit and did not read: idem-core's size rule says why.
pub(crate) fn too_long(length: u64, claim: &Claim) -> StoreError {
    match check_record_len(length, claim.max_outcome()) {
        Err(refused) => refused,
        Ok(()) => StoreError::backend(format!(
            "a script refused a record of {length} bytes, within the call's limit"
        )),
    }
}

/// What `reserve_within` or `read_within` found.
pub(crate) enum Found {
    /// The value `SET ... NX GET` (or `GET`) would have answered: `None` when there was none.
    Value(Option<Bytes>),
    /// A completed record over the call's limit, not read: `None` when it expired (the key is
    /// free), or another call's record, its outcome left out (idem-core's `judge_oversized`).
    Oversized(Option<Record>),
}

/// What the `reserve_within` or `read_within` script answered, for `claim`: the value found,
/// or a completed record over `claim`'s limit judged from its head; one of the claim's own
/// arguments, live, is refused.
pub(crate) fn found_within(reply: Value, claim: &Claim) -> Result<Found, StoreError> {
    match reply {
        Value::Array(items) => match reply_of(items)? {
            Reply::TooLong { length, head } => oversized(length, head, claim).map(Found::Oversized),
            other => Err(StoreError::backend(format!(
                "unexpected reply to reserve_within: {other:?}"
            ))),
        },
        other => value(other).map(Found::Value),
    }
}

/// A completed record `length` bytes long over `claim`'s limit, judged from its `head` (its
/// fingerprint and expiry) by idem-core's [`judge_oversized`]; without a head, refused.
fn oversized(
    length: u64,
    head: Option<(String, String)>,
    claim: &Claim,
) -> Result<Option<Record>, StoreError> {
    let refusal = too_long(length, claim);
    let Some((fingerprint, expires_at)) = head else {
        return Err(refusal);
    };
    let fingerprint: Fingerprint = fingerprint
        .parse()
        .map_err(|_| StoreError::Corrupt("the record's fingerprint is not 64 hex digits".into()))?;
    let expires_at = expires_at
        .parse()
        .map(Timestamp::from_millis)
        .map_err(|_| StoreError::Corrupt("the record's expiry is not a timestamp".into()))?;
    judge_oversized(&fingerprint, expires_at, refusal, claim)
}

/// The reservation a reply of the reserve script to reserving `claim` stands for.
pub(crate) fn reservation(reply: Reply, claim: &Claim) -> Result<Reservation, StoreError> {
    let claimed = claim.record();
    match reply {
        // The script refuses only a live record: one of another call is answered unread.
        Reply::TooLong { length, head } => match oversized(length, head, claim)? {
            Some(unread) => Ok(Reservation::Existing(unread)),
            None => Err(StoreError::backend(
                "the reserve script refused an expired record it should have taken over",
            )),
        },
        Reply::Reserved => Ok(Reservation::Reserved(claimed.clone())),
        Reply::TookOver { previous, record } => Ok(Reservation::TookOver {
            previous: OwnerToken::from(previous),
            record: in_progress(&record, "took over")?,
        }),
        Reply::Held(record) => Ok(Reservation::Reserved(in_progress(&record, "held")?)),
        Reply::Existing(record) => codec::decode(&record).map(Reservation::Existing),
        other => Err(StoreError::backend(format!(
            "unexpected reply to reserve: {other:?}"
        ))),
    }
}

fn in_progress(value: &Bytes, what: &str) -> Result<InProgress, StoreError> {
    match codec::decode(value)? {
        Record::InProgress(record) => Ok(record),
        other => Err(StoreError::backend(format!(
            "reserve replied with a {what} record that is not in progress: {other:?}"
        ))),
    }
}

/// Names and values, as read.
pub(crate) type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// The name/value pairs of a reply such as `CONFIG GET`'s, from a flat array (RESP2) or a
/// map (RESP3).
pub(crate) fn pairs(value: Value) -> Result<Pairs, StoreError> {
    match value {
        Value::Array(items) => {
            if !items.len().is_multiple_of(2) {
                return Err(unexpected(&Value::Array(items)));
            }
            let mut pairs = Vec::with_capacity(items.len() / 2);
            let mut items = items.into_iter();
            while let (Some(name), Some(value)) = (items.next(), items.next()) {
                pairs.push((bytes(name)?, bytes(value)?));
            }
            Ok(pairs)
        }
        Value::Map(entries) => entries
            .into_iter()
            .map(|(name, value)| Ok((bytes(name)?, bytes(value)?)))
            .collect(),
        other => Err(unexpected(&other)),
    }
}

/// A record's value as read with `GET` or `SET ... GET`, in the buffer the reply was read
/// into: `None` when there is none.
pub(crate) fn value(reply: Value) -> Result<Option<Bytes>, StoreError> {
    match reply {
        Value::Nil => Ok(None),
        Value::BulkString(bytes) => Ok(Some(Bytes::from(bytes))),
        other => Err(unexpected(&other)),
    }
}

/// A record's value in a script's reply, in the buffer the reply was read into.
fn shared(value: Value) -> Result<Bytes, StoreError> {
    bytes(value).map(Bytes::from)
}

fn bytes(value: Value) -> Result<Vec<u8>, StoreError> {
    match value {
        Value::BulkString(bytes) => Ok(bytes),
        Value::SimpleString(text) => Ok(text.into_bytes()),
        Value::Int(n) => Ok(n.to_string().into_bytes()),
        other => Err(unexpected(&other)),
    }
}

fn text(value: Option<Value>, what: &str) -> Result<String, StoreError> {
    let bytes = bytes(value.unwrap_or(Value::Nil))?;
    String::from_utf8(bytes).map_err(|_| StoreError::backend(format!("{what} is not UTF-8")))
}

fn unexpected(value: &Value) -> StoreError {
    StoreError::backend(format!("unexpected reply from Redis: {value:?}"))
}

/// What a fenced write's reply says: done, or refused because the lease is lost.
pub(super) fn fenced(reply: Reply, what: &str) -> Result<(), StoreError> {
    match reply {
        Reply::Ok => Ok(()),
        Reply::Lost => Err(StoreError::LeaseLost),
        other => Err(StoreError::backend(format!(
            "unexpected reply to {what}: {other:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(text: &[u8]) -> Value {
        Value::BulkString(text.to_vec())
    }

    #[test]
    fn replies_decode() {
        assert!(matches!(
            reply(Value::Array(vec![bulk(b"ok")])),
            Ok(Reply::Ok)
        ));
        assert!(matches!(
            reply(Value::Array(vec![bulk(b"lost")])),
            Ok(Reply::Lost)
        ));
        assert!(matches!(
            reply(Value::Array(vec![bulk(b"took_over"), bulk(b"o1"), bulk(b"idm1P")])),
            Ok(Reply::TookOver { previous, record }) if previous == "o1" && record == b"idm1P"[..]
        ));
        assert!(matches!(
            reply(Value::Array(vec![bulk(b"existing"), bulk(b"\0x")])),
            Ok(Reply::Existing(record)) if record == b"\0x"[..]
        ));
        let err = reply(Value::Array(vec![bulk(b"corrupt"), bulk(b"why")])).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt(reason) if reason == "why"));
        for odd in [
            Value::Nil,
            Value::Array(vec![]),
            Value::Array(vec![bulk(b"took_over"), bulk(b"o1")]),
            Value::Array(vec![bulk(b"maybe")]),
            Value::Array(vec![Value::Int(1)]),
        ] {
            assert!(reply(odd.clone()).is_err(), "{odd:?}");
        }
    }

    #[test]
    fn a_value_is_nil_or_bytes() {
        assert_eq!(value(Value::Nil).unwrap(), None);
        assert_eq!(value(bulk(b"x")).unwrap(), Some(Bytes::from_static(b"x")));
        assert!(value(Value::Int(1)).is_err());
    }

    #[test]
    fn a_record_read_keeps_the_reply_s_buffer() {
        let read = b"idm1C...".repeat(64);
        let at = read.as_ptr();
        let got = value(Value::BulkString(read)).unwrap().unwrap();
        assert_eq!(got.as_ptr(), at, "GET's value");
        let read = b"idm1P...".to_vec();
        let at = read.as_ptr();
        let existing = reply(Value::Array(vec![
            bulk(b"existing"),
            Value::BulkString(read),
        ]));
        assert!(
            matches!(&existing, Ok(Reply::Existing(record)) if record.as_ptr() == at),
            "a script's record: {existing:?}"
        );
    }
}
