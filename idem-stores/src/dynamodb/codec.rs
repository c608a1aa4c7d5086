//! Records as DynamoDB items, and the size DynamoDB charges for an item.

use std::collections::HashMap;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use idem_core::{
    store::{
        Bytes, Completed, InProgress, Outcome, OwnerToken, Record, Steps, Timestamp, LEASE_GRACE,
    },
    Fingerprint, StoreError,
};

use super::AttributeNames;

/// An item as the SDK sends and returns it.
pub(crate) type Item = HashMap<String, AttributeValue>;

/// The `state` of an in-progress record.
pub(crate) const IN_PROGRESS: &str = "in_progress";
/// The `state` of a completed record.
pub(crate) const COMPLETED: &str = "completed";
const OK: &str = "ok";
const ERR: &str = "err";
const ABORTED: &str = "aborted";

/// The largest item the store writes, in bytes. DynamoDB documents its limit as 400 KB; read as
/// decimal kilobytes that is the conservative bound, which every compatible server accepts.
pub const MAX_ITEM_SIZE: usize = 400_000;

/// DynamoDB's upper bound for the stored size of one number: 38 significant digits take at most
/// 20 bytes, plus one.
const MAX_NUMBER_SIZE: usize = 21;

/// A number attribute.
pub(crate) fn number(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// A point in time as a number attribute: milliseconds since the epoch.
pub(crate) fn time(at: Timestamp) -> AttributeValue {
    number(at.as_millis())
}

/// The TTL attribute's value for a record live until `live_until`: whole seconds, rounded up so
/// that DynamoDB's sweeper never removes a record that idem still counts as live.
pub(crate) fn ttl_seconds(live_until: Timestamp) -> u64 {
    live_until.as_millis().div_ceil(1000)
}

/// The item of an in-progress record under the primary key `key`. Its steps map is always
/// there, empty before the first step; with steps, `ttl` is at least the steps' TTL.
pub(crate) fn in_progress(names: &AttributeNames, key: Item, record: &InProgress) -> Item {
    let lease_ttl = ttl_seconds(record.lease_until() + LEASE_GRACE);
    let mut item = key;
    item.extend([
        (names.state.clone(), AttributeValue::S(IN_PROGRESS.into())),
        (
            names.owner.clone(),
            AttributeValue::S(record.owner().as_str().to_owned()),
        ),
        (
            names.fingerprint.clone(),
            AttributeValue::S(record.fingerprint().to_hex()),
        ),
        (names.live_until.clone(), time(record.lease_until())),
        (names.fencing_token.clone(), number(record.fencing_token())),
        (names.attempt.clone(), number(record.attempt().into())),
        (names.ttl.clone(), number(lease_ttl)),
        (names.steps.clone(), steps_map(record.steps())),
    ]);
    let steps = record.steps();
    if !steps.is_empty() {
        let steps_ttl = ttl_seconds(steps.kept_until());
        item.insert(names.steps_kept_until.clone(), time(steps.kept_until()));
        item.insert(names.steps_ttl.clone(), number(steps_ttl));
        item.insert(names.ttl.clone(), number(lease_ttl.max(steps_ttl)));
    }
    item
}

/// The steps' values as a map attribute, each as binary.
fn steps_map(steps: &Steps) -> AttributeValue {
    AttributeValue::M(
        steps
            .iter()
            .map(|(name, value)| (name.to_owned(), step_value(value)))
            .collect(),
    )
}

/// A step's value as an attribute: binary, so that it reads back byte for byte.
pub(crate) fn step_value(value: &[u8]) -> AttributeValue {
    AttributeValue::B(Blob::new(value.to_vec()))
}

/// The item of a completed record under the primary key `key`, completed by `owner`. The owner
/// is kept so that a completion retried after its answer was lost can tell its own write from
/// another owner's.
pub(crate) fn completed(
    names: &AttributeNames,
    key: Item,
    owner: &OwnerToken,
    record: &Completed,
) -> Result<Item, StoreError> {
    let (outcome, body) = match record.outcome() {
        Outcome::Ok(body) => (OK, Some(body)),
        Outcome::Err(body) => (ERR, Some(body)),
        Outcome::Aborted => (ABORTED, None),
        other => {
            return Err(StoreError::rejected(format!(
                "this version of the DynamoDB store cannot hold the outcome {other:?}"
            )))
        }
    };
    let mut item = key;
    item.extend([
        (names.state.clone(), AttributeValue::S(COMPLETED.into())),
        (
            names.owner.clone(),
            AttributeValue::S(owner.as_str().to_owned()),
        ),
        (
            names.fingerprint.clone(),
            AttributeValue::S(record.fingerprint().to_hex()),
        ),
        (names.live_until.clone(), time(record.expires_at())),
        (names.ttl.clone(), number(ttl_seconds(record.expires_at()))),
        (names.outcome.clone(), AttributeValue::S(outcome.into())),
    ]);
    if let Some(body) = body {
        item.insert(names.body.clone(), body_value(body));
    }
    Ok(item)
}

/// The body as a string when it is text (JSON always is), else as binary. A string is readable
/// in the console and counts the same towards the item size on every DynamoDB-compatible
/// server. A body that starts with a zero byte (idem-http's frame, a sealed value) is binary
/// even when it is UTF-8: a NUL opening a string helps no reader.
fn body_value(body: &Bytes) -> AttributeValue {
    match std::str::from_utf8(body) {
        Ok(text) if !text.starts_with('\0') => AttributeValue::S(text.to_owned()),
        _ => AttributeValue::B(Blob::from_maybe_shared(body.clone())),
    }
}

/// The whole number in attribute `name` of `item`, if it has one.
pub(crate) fn whole_number(item: &Item, name: &str) -> Option<u64> {
    match item.get(name) {
        Some(AttributeValue::N(number)) => number.parse().ok(),
        _ => None,
    }
}

/// The owner token written on an item, if it has one.
pub(crate) fn owner<'a>(names: &AttributeNames, item: &'a Item) -> Option<&'a str> {
    match item.get(&names.owner) {
        Some(AttributeValue::S(owner)) => Some(owner),
        _ => None,
    }
}

/// Reads a record back from an item, taking its values (a completed record's body, an
/// in-progress record's steps) out of it: the buffers the SDK read them into become the
/// record's bytes, not copies. Anything missing or ill-typed is reported, never panicked on.
pub(crate) fn decode(names: &AttributeNames, mut item: Item) -> Result<Record, String> {
    let fields = Fields { names, item: &item };
    let fingerprint = fields.string(&names.fingerprint)?;
    let fingerprint: Fingerprint = fingerprint
        .parse()
        .map_err(|_| format!("attribute `{}` is not 64 hex digits", names.fingerprint))?;
    let live_until = Timestamp::from_millis(fields.whole_number(&names.live_until)?);
    match fields.string(&names.state)? {
        IN_PROGRESS => {
            let owner = OwnerToken::from(fields.string(&names.owner)?.to_owned());
            let attempt = fields
                .whole_number(&names.attempt)?
                .try_into()
                .map_err(|_| format!("attribute `{}` is too large", names.attempt))?;
            let record = InProgress::new(owner, fingerprint, live_until)
                .with_fencing_token(fields.whole_number(&names.fencing_token)?)
                .with_attempt(attempt);
            let kept_until = fields.whole_number(&names.steps_kept_until);
            let steps = take_steps(names, &mut item, kept_until)?;
            Ok(Record::InProgress(record.with_steps(steps)))
        }
        COMPLETED => {
            let outcome = match fields.string(&names.outcome)? {
                OK => Outcome::Ok(take_body(names, &mut item)?),
                ERR => Outcome::Err(take_body(names, &mut item)?),
                ABORTED => Outcome::Aborted,
                other => {
                    return Err(format!(
                        "attribute `{}` is `{other}`, not `{OK}`, `{ERR}` or `{ABORTED}`",
                        names.outcome
                    ))
                }
            };
            Ok(Record::Completed(Completed::new(
                fingerprint,
                outcome,
                live_until,
            )))
        }
        other => Err(format!(
            "attribute `{}` is `{other}`, not `{IN_PROGRESS}` or `{COMPLETED}`",
            names.state
        )),
    }
}

/// Takes a completed item's body out of it: a string's bytes or a binary's, moved.
fn take_body(names: &AttributeNames, item: &mut Item) -> Result<Bytes, String> {
    match item.remove(&names.body) {
        Some(AttributeValue::S(text)) => Ok(Bytes::from(text.into_bytes())),
        Some(AttributeValue::B(blob)) => Ok(blob.into_bytes()),
        Some(_) => Err(format!(
            "attribute `{}` is neither a string nor binary",
            names.body
        )),
        None => Err(Fields { names, item }.missing(&names.body)),
    }
}

/// Takes the steps of an in-progress item out of it: none when the map is absent (an item
/// written before steps existed); their kept-until instant (`kept_until`, as read) is
/// required once there is one.
fn take_steps(
    names: &AttributeNames,
    item: &mut Item,
    kept_until: Result<u64, String>,
) -> Result<Steps, String> {
    let stated = item.contains_key(&names.steps_kept_until);
    let mut steps = Steps::new();
    match item.remove(&names.steps) {
        None => {}
        Some(AttributeValue::M(map)) => {
            for (name, value) in map {
                match value {
                    AttributeValue::B(blob) => steps.insert(name, blob.into_bytes()),
                    _ => {
                        return Err(format!(
                            "step `{name}` in attribute `{}` is not binary",
                            names.steps
                        ))
                    }
                }
            }
        }
        Some(_) => return Err(format!("attribute `{}` is not a map", names.steps)),
    }
    if !steps.is_empty() || stated {
        steps.keep_until(Timestamp::from_millis(kept_until?));
    }
    Ok(steps)
}

/// Typed access to an item's attributes.
struct Fields<'a> {
    names: &'a AttributeNames,
    item: &'a Item,
}

impl Fields<'_> {
    fn get(&self, name: &str) -> Result<&AttributeValue, String> {
        self.item.get(name).ok_or_else(|| self.missing(name))
    }

    fn missing(&self, name: &str) -> String {
        format!(
            "attribute `{name}` is missing (item `{}`)",
            self.item
                .get(&self.names.key)
                .and_then(|key| key.as_s().ok())
                .map(String::as_str)
                .unwrap_or("?")
        )
    }

    fn string(&self, name: &str) -> Result<&str, String> {
        match self.get(name)? {
            AttributeValue::S(text) => Ok(text),
            _ => Err(format!("attribute `{name}` is not a string")),
        }
    }

    fn whole_number(&self, name: &str) -> Result<u64, String> {
        match self.get(name)? {
            AttributeValue::N(number) => number
                .parse()
                .map_err(|_| format!("attribute `{name}` is `{number}`, not a whole number")),
            _ => Err(format!("attribute `{name}` is not a number")),
        }
    }
}

/// An upper bound of the size DynamoDB counts for `item`: per attribute the UTF-8 length of its
/// name plus the size of its value (a string's UTF-8 length, a binary's length, at most 21 bytes
/// for a number, and the sums of those plus 3 bytes per element for lists, maps and sets, with one
/// byte per element and 3 per container as DynamoDB documents).
pub fn item_size(item: &HashMap<String, AttributeValue>) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

fn value_size(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::S(text) => text.len(),
        AttributeValue::N(_) => MAX_NUMBER_SIZE,
        AttributeValue::B(blob) => blob.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(items) => items.iter().map(String::len).sum(),
        AttributeValue::Ns(items) => items.len() * MAX_NUMBER_SIZE,
        AttributeValue::Bs(items) => items.iter().map(|blob| blob.as_ref().len()).sum(),
        AttributeValue::L(items) => 3 + items.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        AttributeValue::M(map) => {
            3 + map
                .iter()
                .map(|(name, v)| 1 + name.len() + value_size(v))
                .sum::<usize>()
        }
        // A type added to DynamoDB later: count its debug form, which is longer than its payload.
        other => format!("{other:?}").len(),
    }
}

#[cfg(test)]
mod tests;
