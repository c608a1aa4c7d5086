//! A record as one Redis string: `idm1`, a state byte, then length-prefixed fields. The scripts
//! read and write the same layout (`lua/common.lua`); see the module docs for the fields.

use idem_core::StoreError;
use idem_core::{
    store::{Bytes, Completed, InProgress, Outcome, OwnerToken, Record, Steps, Timestamp},
    Fingerprint,
};

/// The first bytes of every record of this layout.
const MAGIC: &[u8] = b"idm1";
const IN_PROGRESS: u8 = b'P';
const COMPLETED: u8 = b'C';
/// The fields an in-progress record has before its steps.
const IN_PROGRESS_FIELDS: usize = 7;
/// The most digits a field's length may have (the scripts' limit too).
const MAX_LENGTH_DIGITS: usize = 9;

/// The value of an in-progress record whose key expires at `anchor` on the caller's clock.
pub(crate) fn in_progress(record: &InProgress, anchor: Timestamp) -> Vec<u8> {
    let owner = record.owner().as_str();
    let mut value = Vec::with_capacity(128 + owner.len());
    value.extend_from_slice(MAGIC);
    value.push(IN_PROGRESS);
    field(&mut value, record.fingerprint().to_hex().as_bytes());
    field(&mut value, owner.as_bytes());
    number(&mut value, record.lease_until().as_millis());
    number(&mut value, record.fencing_token());
    number(&mut value, u64::from(record.attempt()));
    number(&mut value, anchor.as_millis());
    let steps = record.steps();
    if steps.is_empty() {
        field(&mut value, b"");
    } else {
        number(&mut value, steps.kept_until().as_millis());
        for (name, step) in steps.iter() {
            field(&mut value, name.as_bytes());
            field(&mut value, step);
        }
    }
    value
}

/// The value of a completed record, as the `complete` script writes it.
#[cfg(test)]
pub(crate) fn completed(record: &Completed, owner: &OwnerToken, outcome: &str) -> Vec<u8> {
    let mut value = MAGIC.to_vec();
    value.push(COMPLETED);
    field(&mut value, record.fingerprint().to_hex().as_bytes());
    field(&mut value, owner.as_str().as_bytes());
    field(&mut value, outcome.as_bytes());
    number(&mut value, record.expires_at().as_millis());
    field(&mut value, record.outcome().body());
    value
}

fn field(value: &mut Vec<u8>, bytes: &[u8]) {
    value.extend_from_slice(bytes.len().to_string().as_bytes());
    value.push(b':');
    value.extend_from_slice(bytes);
}

fn number(value: &mut Vec<u8>, n: u64) {
    field(value, n.to_string().as_bytes());
}

/// Decodes a record's value, as read from the server. The values the record holds (a
/// completed record's outcome, its steps' values) are slices of `value`, sharing its buffer,
/// not copies. Anything that is not a record of this layout is [`StoreError::Corrupt`], never
/// a panic.
pub(crate) fn decode(value: &Bytes) -> Result<Record, StoreError> {
    let rest = value
        .strip_prefix(MAGIC)
        .ok_or_else(|| corrupt("not a record of this layout"))?;
    let (&state, rest) = rest
        .split_first()
        .ok_or_else(|| corrupt("the record ends after its magic"))?;
    let fields = fields(rest)?;
    match state {
        IN_PROGRESS => in_progress_record(value, &fields).map(Record::InProgress),
        COMPLETED => completed_record(value, &fields).map(Record::Completed),
        other => Err(corrupt(&format!(
            "unknown state `{}`",
            char::from(other).escape_default()
        ))),
    }
}

/// Splits `rest` into its length-prefixed fields.
fn fields(mut rest: &[u8]) -> Result<Vec<&[u8]>, StoreError> {
    let mut fields = Vec::with_capacity(IN_PROGRESS_FIELDS);
    while !rest.is_empty() {
        let colon = rest
            .iter()
            .take(MAX_LENGTH_DIGITS + 1)
            .position(|&b| b == b':')
            .filter(|&at| at > 0)
            .ok_or_else(|| corrupt("a field length is missing or too long"))?;
        let digits = &rest[..colon];
        if !digits.iter().all(u8::is_ascii_digit) {
            return Err(corrupt("a field length is not a number"));
        }
        let length: usize = std::str::from_utf8(digits)
            .ok()
            .and_then(|digits| digits.parse().ok())
            .ok_or_else(|| corrupt("a field length is not a number"))?;
        let body = &rest[colon + 1..];
        if length > body.len() {
            return Err(corrupt("a field runs past the end of the record"));
        }
        fields.push(&body[..length]);
        rest = &body[length..];
    }
    Ok(fields)
}

/// The in-progress record of `fields`, the fields of `value`.
fn in_progress_record(value: &Bytes, fields: &[&[u8]]) -> Result<InProgress, StoreError> {
    if fields.len() < IN_PROGRESS_FIELDS || fields.len().is_multiple_of(2) {
        return Err(corrupt(&format!(
            "an in-progress record has {} fields",
            fields.len()
        )));
    }
    let attempt = millis(fields[4], "attempt")?
        .try_into()
        .map_err(|_| corrupt("`attempt` is too large"))?;
    millis(fields[5], "anchor")?;
    let step_fields = &fields[IN_PROGRESS_FIELDS..];
    let steps = match fields[6] {
        b"" if step_fields.is_empty() => Steps::new(),
        b"" => return Err(corrupt("`steps_kept_until` is missing")),
        kept => {
            let mut steps = Steps::new()
                .with_kept_until(Timestamp::from_millis(millis(kept, "steps_kept_until")?));
            for pair in step_fields.chunks_exact(2) {
                let name = std::str::from_utf8(pair[0])
                    .map_err(|_| corrupt("a step's name is not UTF-8"))?;
                if steps.get(name).is_some() {
                    return Err(corrupt(&format!("the step `{name}` is recorded twice")));
                }
                steps.insert(name, value.slice_ref(pair[1]));
            }
            steps
        }
    };
    Ok(InProgress::new(
        owner(fields[1])?,
        fingerprint(fields[0])?,
        Timestamp::from_millis(millis(fields[2], "lease_until")?),
    )
    .with_fencing_token(millis(fields[3], "fencing_token")?)
    .with_attempt(attempt)
    .with_steps(steps))
}

/// The completed record of `fields`, the fields of `value`.
fn completed_record(value: &Bytes, fields: &[&[u8]]) -> Result<Completed, StoreError> {
    let &[fingerprint_hex, owner_token, outcome, expires_at, body] = fields else {
        return Err(corrupt(&format!(
            "a completed record has {} fields, not 5",
            fields.len()
        )));
    };
    // Checked, not kept: a completed record's owner is only for its scripts.
    owner_text(owner_token)?;
    let outcome = match outcome {
        b"ok" => Outcome::Ok(value.slice_ref(body)),
        b"err" => Outcome::Err(value.slice_ref(body)),
        b"aborted" => Outcome::Aborted,
        other => {
            return Err(corrupt(&format!(
                "unknown outcome `{}`",
                String::from_utf8_lossy(other)
            )))
        }
    };
    Ok(Completed::new(
        fingerprint(fingerprint_hex)?,
        outcome,
        Timestamp::from_millis(millis(expires_at, "expires_at")?),
    ))
}

/// A decimal number as the scripts accept it: digits, no leading zero, at most 20 of them.
fn millis(digits: &[u8], name: &str) -> Result<u64, StoreError> {
    let well_formed = !digits.is_empty()
        && digits.len() <= 20
        && digits.iter().all(u8::is_ascii_digit)
        && (digits == b"0" || digits[0] != b'0');
    well_formed
        .then(|| std::str::from_utf8(digits).ok()?.parse().ok())
        .flatten()
        .ok_or_else(|| corrupt(&format!("`{name}` is not a number")))
}

fn fingerprint(hex: &[u8]) -> Result<Fingerprint, StoreError> {
    std::str::from_utf8(hex)
        .ok()
        .and_then(|hex| hex.parse().ok())
        .ok_or_else(|| corrupt("`fingerprint` is not a fingerprint"))
}

fn owner(token: &[u8]) -> Result<OwnerToken, StoreError> {
    owner_text(token).map(|token| OwnerToken::from(token.to_owned()))
}

fn owner_text(token: &[u8]) -> Result<&str, StoreError> {
    std::str::from_utf8(token).map_err(|_| corrupt("`owner` is not UTF-8"))
}

fn corrupt(reason: &str) -> StoreError {
    StoreError::Corrupt(format!("Redis record: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `value` decoded as read into a buffer of its own.
    fn decoded(value: &[u8]) -> Result<Record, StoreError> {
        decode(&Bytes::copy_from_slice(value))
    }

    fn claim() -> InProgress {
        InProgress::new(
            OwnerToken::from("owner-1".to_owned()),
            Fingerprint::empty(),
            Timestamp::from_millis(1_700_000_030_000),
        )
        .with_fencing_token(1_700_000_000_000_000)
        .with_attempt(2)
    }

    #[test]
    fn an_in_progress_record_decodes_as_written() {
        let anchor = Timestamp::from_millis(1_700_000_090_000);
        assert_eq!(
            decoded(&in_progress(&claim(), anchor)).unwrap(),
            Record::InProgress(claim())
        );
        let steps = Steps::new()
            .with_step("charge", b"\0binary:\xff".to_vec())
            .with_step("a:b", Vec::new())
            .with_step("", b"empty name".to_vec())
            .with_step("\u{e9}t\u{e9}", b"12:34".to_vec())
            .with_kept_until(Timestamp::from_millis(1_800_000_000_000));
        let with_steps = claim().with_steps(steps).released();
        assert_eq!(
            decoded(&in_progress(&with_steps, anchor)).unwrap(),
            Record::InProgress(with_steps)
        );
        let long_owner = InProgress::new(
            OwnerToken::from("o".repeat(10_000)),
            Fingerprint::empty(),
            Timestamp::EPOCH,
        );
        assert_eq!(
            decoded(&in_progress(&long_owner, anchor)).unwrap(),
            Record::InProgress(long_owner)
        );
    }

    #[test]
    fn a_completed_record_decodes_as_written() {
        let owner = OwnerToken::from("owner-1".to_owned());
        for (outcome, tag) in [
            (Outcome::ok(b"{\"id\":1}".to_vec()), "ok"),
            (Outcome::err(b"\0sealed\xff".to_vec()), "err"),
            (Outcome::Aborted, "aborted"),
        ] {
            let record = Completed::new(Fingerprint::empty(), outcome, Timestamp::from_millis(99));
            assert_eq!(
                decoded(&completed(&record, &owner, tag)).unwrap(),
                Record::Completed(record)
            );
        }
    }

    #[test]
    fn malformed_records_are_corrupt() {
        let fp = Fingerprint::empty().to_hex();
        let good = in_progress(&claim(), Timestamp::EPOCH);
        let cases: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"idm1".to_vec(),
            b"idm2P".to_vec(),
            [b"idm1Q", &good[5..]].concat(),
            b"idm1P".to_vec(),
            b"idm1Pxx:a".to_vec(),
            b"idm1P1234567890:a".to_vec(),
            b"idm1P9:abc".to_vec(),
            b"idm1P:abc".to_vec(),
            b"idm1P3abc".to_vec(),
            [&good[..], b"4:name"].concat(),
            [&good[..], b"4:name5:value"].concat(),
            format!("idm1P64:{fp}1:o1:11:11:11:11:11:a1:11:a1:2").into_bytes(),
            format!("idm1P64:{fp}1:o2:1x1:11:11:10:").into_bytes(),
            format!("idm1P64:{fp}1:o2:011:11:11:10:").into_bytes(),
            b"idm1P2:zz1:o1:11:11:11:10:".to_vec(),
            format!("idm1P64:{fp}1:o1:11:11:11:13:1x24:name1:v").into_bytes(),
            format!("idm1C64:{fp}1:o5:maybe1:10:").into_bytes(),
            format!("idm1C64:{fp}1:o2:ok2:-10:").into_bytes(),
            format!("idm1C64:{fp}1:o2:ok1:1").into_bytes(),
            format!("idm1C64:{fp}1:o2:ok1:10:0:").into_bytes(),
        ];
        for case in cases {
            let err = decoded(&case).unwrap_err();
            assert!(
                matches!(err, StoreError::Corrupt(_)),
                "{}: {err}",
                String::from_utf8_lossy(&case)
            );
        }
        let mut not_utf8 = format!("idm1P64:{fp}1:o1:11:11:11:11:12:").into_bytes();
        not_utf8.extend_from_slice(b"\xff\xfe1:v");
        assert!(matches!(decoded(&not_utf8), Err(StoreError::Corrupt(_))));
    }

    /// A completed record of `body` read into a buffer that holds `before` and `after` around
    /// it, as a reply may: its outcome is the body, sliced out of that buffer.
    fn read_amid(body: &[u8], before: &[u8], after: &[u8]) {
        let record = Completed::new(
            Fingerprint::empty(),
            Outcome::ok(body.to_vec()),
            Timestamp::EPOCH,
        );
        let value = completed(&record, &OwnerToken::from("o".to_owned()), "ok");
        let buffer = Bytes::from([before, &value, after].concat());
        let read = buffer.slice(before.len()..before.len() + value.len());
        let Ok(Record::Completed(decoded)) = decode(&read) else {
            panic!("{body:?}: a completed record");
        };
        assert_eq!(decoded.outcome().body(), body);
        let shared = decoded.outcome().bytes().expect("an ok outcome");
        if !body.is_empty() {
            let at = buffer.as_ptr() as usize + before.len() + value.len() - body.len();
            assert_eq!(
                shared.as_ptr() as usize,
                at,
                "{body:?}: sliced out of the buffer read"
            );
        }
    }

    #[test]
    fn a_completed_record_s_outcome_is_a_slice_of_the_value_read() {
        for body in [&b""[..], b"\"ch_1\"", b"\0iS\x02\xff\0", &[0xff; 1 << 10]] {
            read_amid(body, b"", b"");
            read_amid(body, b"*3\r\n$8\r\nexisting", b"\r\n");
        }
    }

    #[test]
    fn step_values_are_slices_of_the_value_read() {
        let steps = Steps::new()
            .with_step("first", b"\xff\0mid".to_vec())
            .with_step("last", b"end".to_vec())
            .with_step("none", Vec::new())
            .with_kept_until(Timestamp::from_millis(5));
        let written = claim().with_steps(steps);
        let value = Bytes::from(in_progress(&written, Timestamp::EPOCH));
        let Ok(Record::InProgress(read)) = decode(&value) else {
            panic!("an in-progress record");
        };
        assert_eq!(read, written);
        let within = value.as_ptr_range();
        for name in ["first", "last"] {
            let step = read.steps().get(name).expect("recorded");
            assert!(
                within.contains(&step.as_ptr()),
                "step `{name}` is a slice of the value"
            );
        }
        assert_eq!(read.steps().get("none"), Some(&b""[..]));
    }

    #[test]
    fn no_input_panics() {
        let good = in_progress(
            &claim().with_steps(
                Steps::new()
                    .with_step("charge", b"ch_1".to_vec())
                    .with_kept_until(Timestamp::from_millis(5)),
            ),
            Timestamp::EPOCH,
        );
        // Every prefix, and every single-byte change to a few interesting bytes.
        for end in 0..good.len() {
            let _ = decoded(&good[..end]);
        }
        for at in 0..good.len() {
            for byte in [b'0', b'9', b':', 0, 0xff, b'P', b'C'] {
                let mut spoiled = good.clone();
                spoiled[at] = byte;
                let _ = decoded(&spoiled);
            }
        }
    }
}
