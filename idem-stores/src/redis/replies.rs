//! The scripts' replies as values, and what they stand for.

use idem_core::store::check_record_len;
use idem_core::{
    store::{Claim, InProgress, Outcome, OwnerToken, Record, Reservation},
    StoreError,
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

/// What a script answered. Records come as their stored value.
#[derive(Debug)]
pub(crate) enum Reply {
    /// `{'ok'}`
    Ok,
    /// `{'lost'}`: the record is not held by the owner.
    Lost,
    /// `{'reserved'}`
    Reserved,
    /// `{'took_over', previous, record}`: the record written over `previous`'s.
    TookOver { previous: String, record: Vec<u8> },
    /// `{'held', record}`: the caller's own record, written by an earlier attempt of the
    /// request.
    Held(Vec<u8>),
    /// `{'existing', record}`
    Existing(Vec<u8>),
    /// `{'too_long', length}`: a completed record over the call's limit, not read.
    TooLong(u64),
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
            let record = bytes(items.pop().unwrap_or(Value::Nil))?;
            let previous = text(items.pop(), "previous owner")?;
            Ok(Reply::TookOver { previous, record })
        }
        (b"held", 2) => Ok(Reply::Held(bytes(items.pop().unwrap_or(Value::Nil))?)),
        (b"existing", 2) => Ok(Reply::Existing(bytes(items.pop().unwrap_or(Value::Nil))?)),
        (b"too_long", 2) => match items.pop() {
            Some(Value::Int(length)) => Ok(Reply::TooLong(length.max(0) as u64)),
            other => Err(unexpected(&other.unwrap_or(Value::Nil))),
        },
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

/// What the `reserve_within` script answered: the value `SET ... NX GET` would have (`None`
/// when the claim was written), or its refusal of a completed record over `claim`'s limit.
pub(crate) fn found_within(reply: Value, claim: &Claim) -> Result<Option<Vec<u8>>, StoreError> {
    match reply {
        Value::Array(items) => match reply_of(items)? {
            Reply::TooLong(length) => Err(too_long(length, claim)),
            other => Err(StoreError::backend(format!(
                "unexpected reply to reserve_within: {other:?}"
            ))),
        },
        other => value(other),
    }
}

/// The reservation a reply of the reserve script to reserving `claim` stands for.
pub(crate) fn reservation(reply: Reply, claim: &Claim) -> Result<Reservation, StoreError> {
    let claimed = claim.record();
    match reply {
        Reply::TooLong(length) => Err(too_long(length, claim)),
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

fn in_progress(value: &[u8], what: &str) -> Result<InProgress, StoreError> {
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

/// A record's value as read with `GET` or `SET ... GET`: `None` when there is none.
pub(crate) fn value(reply: Value) -> Result<Option<Vec<u8>>, StoreError> {
    match reply {
        Value::Nil => Ok(None),
        Value::BulkString(bytes) => Ok(Some(bytes)),
        other => Err(unexpected(&other)),
    }
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
            Ok(Reply::TookOver { previous, record }) if previous == "o1" && record == b"idm1P"
        ));
        assert!(matches!(
            reply(Value::Array(vec![bulk(b"existing"), bulk(b"\0x")])),
            Ok(Reply::Existing(record)) if record == b"\0x"
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
        assert_eq!(value(bulk(b"x")).unwrap(), Some(b"x".to_vec()));
        assert!(value(Value::Int(1)).is_err());
    }
}
