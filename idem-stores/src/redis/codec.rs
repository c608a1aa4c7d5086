//! The record as hash fields, and the scripts' replies as values.

use idem_core::{
    Completed, Fingerprint, InProgress, Outcome, OwnerToken, Record, Reservation, Steps,
    StoreError, Timestamp,
};
use redis::Value;

/// The hash fields of a record, in the order the scripts write them.
pub(crate) mod field {
    pub(crate) const STATE: &str = "state";
    pub(crate) const FINGERPRINT: &str = "fingerprint";
    pub(crate) const OWNER: &str = "owner";
    pub(crate) const LEASE_UNTIL: &str = "lease_until";
    pub(crate) const FENCING_TOKEN: &str = "fencing_token";
    pub(crate) const ATTEMPT: &str = "attempt";
    pub(crate) const OUTCOME: &str = "outcome";
    pub(crate) const BODY: &str = "body";
    pub(crate) const EXPIRES_AT: &str = "expires_at";
    /// Until when the steps of an in-progress record hold the key.
    pub(crate) const STEPS_KEPT_UNTIL: &str = "steps_kept_until";
    /// In front of a step's name, for the field that holds its value. No other field starts
    /// with it.
    pub(crate) const STEP_PREFIX: &str = "step:";
}

/// `state` of a reservation.
pub(crate) const IN_PROGRESS: &str = "in_progress";
/// `state` of a stored outcome.
pub(crate) const COMPLETED: &str = "completed";

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

/// A hash's fields and values, as read.
pub(crate) type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// What a script answered.
#[derive(Debug)]
pub(crate) enum Reply {
    /// `{'ok'}`
    Ok,
    /// `{'lost'}`: the record is not held by the owner.
    Lost,
    /// `{'reserved'}`
    Reserved,
    /// `{'took_over', previous, attempt, fencing_token, step_fields}`
    TookOver {
        previous: String,
        attempt: u32,
        fencing_token: u64,
        /// The step fields and `steps_kept_until` the record kept: none unless the claim is
        /// the same call.
        steps: Fields,
    },
    /// `{'held', fields}`: the caller's own record, written by an earlier attempt of the
    /// request.
    Held(Fields),
    /// `{'existing', fields}`
    Existing(Fields),
}

/// Decodes a script's reply; `{'corrupt', reason}` and anything unexpected are errors.
pub(crate) fn reply(value: Value) -> Result<Reply, StoreError> {
    let Value::Array(mut items) = value else {
        return Err(unexpected(&value));
    };
    let tag = match items.first() {
        Some(Value::BulkString(tag)) => tag.clone(),
        Some(Value::SimpleString(tag)) => tag.clone().into_bytes(),
        _ => return Err(unexpected(&Value::Array(items))),
    };
    match (tag.as_slice(), items.len()) {
        (b"ok", 1) => Ok(Reply::Ok),
        (b"lost", 1) => Ok(Reply::Lost),
        (b"reserved", 1) => Ok(Reply::Reserved),
        (b"took_over", 5) => {
            let steps = pairs(items.pop().unwrap_or(Value::Nil))?;
            let fencing_token = number(items.pop(), "fencing token")?;
            let attempt = number(items.pop(), "attempt")?;
            let previous = text(items.pop(), "previous owner")?;
            Ok(Reply::TookOver {
                previous,
                attempt,
                fencing_token,
                steps,
            })
        }
        (b"held", 2) => Ok(Reply::Held(pairs(items.pop().unwrap_or(Value::Nil))?)),
        (b"existing", 2) => Ok(Reply::Existing(pairs(items.pop().unwrap_or(Value::Nil))?)),
        (b"corrupt", 2) => Err(StoreError::Corrupt(text(items.pop(), "reason")?)),
        _ => Err(unexpected(&Value::Array(items))),
    }
}

/// The reservation a reply to reserving `claimed` stands for.
pub(crate) fn reservation(reply: Reply, claimed: &InProgress) -> Result<Reservation, StoreError> {
    match reply {
        Reply::Reserved => Ok(Reservation::Reserved(claimed.clone())),
        Reply::TookOver {
            previous,
            attempt,
            fencing_token,
            steps: step_fields,
        } => Ok(Reservation::TookOver {
            previous: OwnerToken::from(previous),
            record: claimed
                .clone()
                .with_attempt(attempt)
                .with_fencing_token(fencing_token)
                .with_steps(steps(&step_fields)?),
        }),
        Reply::Held(fields) => match record(&fields)? {
            Record::InProgress(held) => Ok(Reservation::Reserved(held)),
            other => Err(StoreError::backend(format!(
                "reserve replied with a held record that is not in progress: {other:?}"
            ))),
        },
        Reply::Existing(fields) => record(&fields).map(Reservation::Existing),
        other => Err(StoreError::backend(format!(
            "unexpected reply to reserve: {other:?}"
        ))),
    }
}

/// The field/value pairs of a hash, from a flat array (RESP2) or a map (RESP3).
pub(crate) fn pairs(value: Value) -> Result<Fields, StoreError> {
    match value {
        Value::Array(items) => {
            if items.len() % 2 != 0 {
                return Err(StoreError::Corrupt("odd number of hash items".into()));
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

/// Decodes a record from its hash fields.
pub(crate) fn record(fields: &[(Vec<u8>, Vec<u8>)]) -> Result<Record, StoreError> {
    let get = |name: &str| {
        fields
            .iter()
            .find(|(field, _)| field == name.as_bytes())
            .map(|(_, value)| value.as_slice())
            .ok_or_else(|| StoreError::Corrupt(format!("field `{name}` is missing")))
    };
    let utf8 = |name: &str| {
        get(name).and_then(|value| {
            std::str::from_utf8(value)
                .map_err(|_| StoreError::Corrupt(format!("field `{name}` is not UTF-8")))
        })
    };
    let time = |name: &str| {
        utf8(name).and_then(|value| {
            value
                .parse()
                .map(Timestamp::from_millis)
                .map_err(|_| StoreError::Corrupt(format!("field `{name}` is not a timestamp")))
        })
    };
    let count = |name: &str| {
        utf8(name).and_then(|value| {
            value
                .parse::<u64>()
                .map_err(|_| StoreError::Corrupt(format!("field `{name}` is not a number")))
        })
    };
    let fingerprint = utf8(field::FINGERPRINT).and_then(|hex| {
        hex.parse::<Fingerprint>().map_err(|_| {
            StoreError::Corrupt(format!(
                "field `{}` is not a fingerprint",
                field::FINGERPRINT
            ))
        })
    })?;
    match utf8(field::STATE)? {
        IN_PROGRESS => {
            let owner = OwnerToken::from(utf8(field::OWNER)?.to_owned());
            let attempt = count(field::ATTEMPT)?.try_into().map_err(|_| {
                StoreError::Corrupt(format!("field `{}` is too large", field::ATTEMPT))
            })?;
            let record = InProgress::new(owner, fingerprint, time(field::LEASE_UNTIL)?)
                .with_fencing_token(count(field::FENCING_TOKEN)?)
                .with_attempt(attempt)
                .with_steps(steps(fields)?);
            Ok(Record::InProgress(record))
        }
        COMPLETED => {
            let body = || get(field::BODY).map(<[u8]>::to_vec);
            let outcome = match utf8(field::OUTCOME)? {
                "ok" => Outcome::Ok(body()?),
                "err" => Outcome::Err(body()?),
                "aborted" => Outcome::Aborted,
                other => {
                    return Err(StoreError::Corrupt(format!("unknown outcome `{other}`")));
                }
            };
            Ok(Record::Completed(Completed::new(
                fingerprint,
                outcome,
                time(field::EXPIRES_AT)?,
            )))
        }
        other => Err(StoreError::Corrupt(format!("unknown state `{other}`"))),
    }
}

/// The steps among a record's hash fields: each `step:<name>` field, and `steps_kept_until`,
/// which must be there when a step is.
fn steps(fields: &[(Vec<u8>, Vec<u8>)]) -> Result<Steps, StoreError> {
    let mut steps = Steps::new();
    let mut kept_until = None;
    for (name, value) in fields {
        if let Some(step) = name.strip_prefix(field::STEP_PREFIX.as_bytes()) {
            let step = std::str::from_utf8(step)
                .map_err(|_| StoreError::Corrupt("a step field's name is not UTF-8".to_owned()))?;
            steps.insert(step, value.clone());
        } else if name == field::STEPS_KEPT_UNTIL.as_bytes() {
            kept_until = Some(
                std::str::from_utf8(value)
                    .ok()
                    .and_then(|value| value.parse().ok())
                    .map(Timestamp::from_millis)
                    .ok_or_else(|| {
                        StoreError::Corrupt(format!(
                            "field `{}` is not a timestamp",
                            field::STEPS_KEPT_UNTIL
                        ))
                    })?,
            );
        }
    }
    match kept_until {
        Some(kept_until) => Ok(steps.with_kept_until(kept_until)),
        None if steps.is_empty() => Ok(steps),
        None => Err(StoreError::Corrupt(format!(
            "field `{}` is missing",
            field::STEPS_KEPT_UNTIL
        ))),
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

fn number<N: std::str::FromStr>(value: Option<Value>, what: &str) -> Result<N, StoreError> {
    let text = text(value, what)?;
    text.parse()
        .map_err(|_| StoreError::backend(format!("{what} `{text}` is not a number")))
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

    fn fields(pairs: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        pairs
            .iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    fn hex() -> String {
        Fingerprint::empty().to_hex()
    }

    #[test]
    fn decodes_both_states() {
        let fp = hex();
        let pending = record(&fields(&[
            ("state", "in_progress"),
            ("fingerprint", &fp),
            ("owner", "o1"),
            ("lease_until", "1700"),
            ("fencing_token", "1700000000000000"),
            ("attempt", "2"),
            ("clock_offset", "-3"),
        ]))
        .unwrap();
        assert_eq!(
            pending,
            Record::InProgress(
                InProgress::new(
                    OwnerToken::from("o1".to_owned()),
                    Fingerprint::empty(),
                    Timestamp::from_millis(1700)
                )
                .with_fencing_token(1_700_000_000_000_000)
                .with_attempt(2)
            )
        );
        let done = record(&fields(&[
            ("state", "completed"),
            ("fingerprint", &fp),
            ("outcome", "err"),
            ("body", "{\"x\":1}"),
            ("expires_at", "99"),
        ]))
        .unwrap();
        assert_eq!(
            done,
            Record::Completed(Completed::new(
                Fingerprint::empty(),
                Outcome::Err(b"{\"x\":1}".to_vec()),
                Timestamp::from_millis(99)
            ))
        );
    }

    #[test]
    fn malformed_records_are_corrupt() {
        let fp = hex();
        let cases: Vec<Vec<(&str, &str)>> = vec![
            vec![],
            vec![("state", "in_progress"), ("fingerprint", &fp)],
            vec![("state", "done"), ("fingerprint", &fp)],
            vec![("state", "completed"), ("fingerprint", "zz")],
            vec![
                ("state", "completed"),
                ("fingerprint", &fp),
                ("outcome", "maybe"),
                ("body", ""),
                ("expires_at", "1"),
            ],
            vec![
                ("state", "completed"),
                ("fingerprint", &fp),
                ("outcome", "ok"),
                ("body", ""),
                ("expires_at", "-1"),
            ],
        ];
        for case in cases {
            let err = record(&fields(&case)).unwrap_err();
            assert!(matches!(err, StoreError::Corrupt(_)), "{case:?}: {err}");
        }
    }

    fn raw(pairs: &[(&[u8], &[u8])]) -> Vec<(Vec<u8>, Vec<u8>)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect()
    }

    #[test]
    fn decodes_steps_byte_exact() {
        let fp = hex();
        let value: &[u8] = b"{\"id\":\"ch_1\"}\xff";
        let pending = record(&raw(&[
            (b"state", b"in_progress"),
            (b"fingerprint", fp.as_bytes()),
            (b"owner", b"o1"),
            (b"lease_until", b"0"),
            (b"fencing_token", b"5"),
            (b"attempt", b"1"),
            (b"clock_offset", b"0"),
            (b"step:charge", value),
            (b"step:a:b", b""),
            (b"steps_kept_until", b"1800"),
        ]))
        .unwrap();
        let Record::InProgress(pending) = pending else {
            panic!("in progress expected, got {pending:?}");
        };
        let steps = pending.steps();
        assert_eq!(steps.get("charge"), Some(value));
        assert_eq!(steps.get("a:b"), Some(&b""[..]));
        assert_eq!(steps.len(), 2);
        assert_eq!(steps.kept_until(), Timestamp::from_millis(1800));
        assert!(pending.is_released());
    }

    #[test]
    fn malformed_steps_are_corrupt() {
        let fp = hex();
        let base: Vec<(&[u8], &[u8])> = vec![
            (b"state", b"in_progress"),
            (b"fingerprint", fp.as_bytes()),
            (b"owner", b"o1"),
            (b"lease_until", b"10"),
            (b"fencing_token", b"5"),
            (b"attempt", b"1"),
        ];
        let cases: [&[(&[u8], &[u8])]; 4] = [
            &[(b"step:charge", b"1")],
            &[(b"step:charge", b"1"), (b"steps_kept_until", b"soon")],
            &[(b"steps_kept_until", b"-1")],
            &[(b"step:\xff", b"1"), (b"steps_kept_until", b"10")],
        ];
        for case in cases {
            let fields = raw(&[base.as_slice(), case].concat());
            let err = record(&fields).unwrap_err();
            assert!(matches!(err, StoreError::Corrupt(_)), "{case:?}: {err}");
        }
    }

    #[test]
    fn a_takeover_reply_carries_the_steps() {
        let bulk = |s: &[u8]| Value::BulkString(s.to_vec());
        let claimed = InProgress::new(
            OwnerToken::from("o2".to_owned()),
            Fingerprint::empty(),
            Timestamp::from_millis(500),
        );
        let took_over = |steps: Vec<Value>| {
            reply(Value::Array(vec![
                bulk(b"took_over"),
                bulk(b"o1"),
                bulk(b"2"),
                bulk(b"9"),
                Value::Array(steps),
            ]))
            .and_then(|reply| reservation(reply, &claimed))
            .unwrap()
        };
        let Reservation::TookOver { previous, record } = took_over(vec![
            bulk(b"step:charge"),
            bulk(b"\"ch_1\""),
            bulk(b"steps_kept_until"),
            bulk(b"900"),
        ]) else {
            panic!("a takeover expected");
        };
        assert_eq!(previous, OwnerToken::from("o1".to_owned()));
        assert_eq!(record.attempt(), 2);
        assert_eq!(record.fencing_token(), 9);
        assert_eq!(record.steps().get("charge"), Some(&b"\"ch_1\""[..]));
        assert_eq!(record.steps().kept_until(), Timestamp::from_millis(900));
        let Reservation::TookOver { record, .. } = took_over(vec![]) else {
            panic!("a takeover expected");
        };
        assert!(record.steps().is_empty());
    }

    #[test]
    fn replies_decode() {
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        assert!(matches!(
            reply(Value::Array(vec![bulk("ok")])),
            Ok(Reply::Ok)
        ));
        assert!(matches!(
            reply(Value::Array(vec![bulk("lost")])),
            Ok(Reply::Lost)
        ));
        assert!(matches!(
            reply(Value::Array(vec![bulk("corrupt"), bulk("why")])),
            Err(StoreError::Corrupt(reason)) if reason == "why"
        ));
        assert!(matches!(reply(Value::Int(3)), Err(StoreError::Backend(_))));
        assert!(matches!(
            reply(Value::Array(vec![
                bulk("existing"),
                Value::Array(vec![bulk("x")])
            ])),
            Err(StoreError::Corrupt(_))
        ));
    }
}
