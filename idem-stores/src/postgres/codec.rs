//! Records as table rows: the values written, and the checks on the values read back.

use idem_core::store::check_outcome_len;
use idem_core::{
    store::{Completed, InProgress, Outcome, OwnerToken, Record, Steps, Timestamp},
    Fingerprint, StoreError,
};
use sqlx::postgres::PgRow;
use sqlx::Row;

use super::steps;

/// The `state` of an in-progress record.
pub(crate) const IN_PROGRESS: &str = "in_progress";
/// The `state` of a completed record.
pub(crate) const COMPLETED: &str = "completed";
const OK: &str = "ok";
const ERR: &str = "err";
const ABORTED: &str = "aborted";

/// A point in time as a `bigint` of milliseconds; the latest times a `u64` holds (no deadline
/// ever reaches them) are kept as the largest `bigint`.
pub(crate) fn millis(at: Timestamp) -> i64 {
    i64::try_from(at.as_millis()).unwrap_or(i64::MAX)
}

/// A count (fencing token, attempt) as a `bigint`.
pub(crate) fn count(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A length (a call's longest outcome) as a `bigint`.
pub(crate) fn length(bytes: usize) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

/// Refuses a row whose `body_length` (the reservation's measure of its body, which it leaves
/// out when it is over the limit) is over `max_outcome`: idem-core's size rule, checked
/// before the body is decoded.
pub(crate) fn check_body_length(row: &PgRow, max_outcome: Option<usize>) -> Result<(), StoreError> {
    match optional::<i64>(row, "body_length")? {
        Some(length) => check_outcome_len(length.max(0) as u64, max_outcome),
        None => Ok(()),
    }
}

/// The `outcome` and `body` columns of a completed record.
pub(crate) fn outcome_columns(
    outcome: &Outcome,
) -> Result<(&'static str, Option<&[u8]>), StoreError> {
    match outcome {
        Outcome::Ok(body) => Ok((OK, Some(body))),
        Outcome::Err(body) => Ok((ERR, Some(body))),
        Outcome::Aborted => Ok((ABORTED, None)),
        other => Err(StoreError::rejected(format!(
            "this version of the PostgreSQL store cannot hold the outcome {other:?}"
        ))),
    }
}

/// A row as read back: the record it holds, and the owner it was taken over from if the
/// statement that returned it was a takeover.
pub(crate) struct Decoded {
    pub(crate) record: Record,
    pub(crate) taken_over_from: Option<OwnerToken>,
}

/// The fingerprint and the expiry (`live_until_ms`) of a row, read alone.
pub(crate) fn head(row: &PgRow) -> Result<(Fingerprint, Timestamp), StoreError> {
    let fingerprint = required::<String>(row, "fingerprint")?
        .parse()
        .map_err(|_| corrupt("fingerprint", "is not 64 hex digits"))?;
    Ok((
        fingerprint,
        Timestamp::from_millis(whole(row, "live_until_ms")?),
    ))
}

/// Reads a record from a row of the table's record columns. Anything missing, ill-typed or out
/// of range is reported with the column's name, never panicked on.
pub(crate) fn decode(row: &PgRow) -> Result<Decoded, StoreError> {
    let fingerprint: Fingerprint = required::<String>(row, "fingerprint")?
        .parse()
        .map_err(|_| corrupt("fingerprint", "is not 64 hex digits"))?;
    let live_until = Timestamp::from_millis(whole(row, "live_until_ms")?);
    let state = required::<String>(row, "state")?;
    let record = match state.as_str() {
        IN_PROGRESS => {
            let owner = OwnerToken::from(required::<String>(row, "owner")?);
            let attempt = u32::try_from(whole(row, "attempt")?)
                .map_err(|_| corrupt("attempt", "is too large"))?;
            Record::InProgress(
                InProgress::new(owner, fingerprint, live_until)
                    .with_fencing_token(whole(row, "fencing_token")?)
                    .with_attempt(attempt)
                    .with_steps(decode_steps(row)?),
            )
        }
        COMPLETED => {
            // sqlx copies the body out of the row; that copy becomes the outcome's bytes.
            let body = || required::<Vec<u8>>(row, "body");
            let outcome = match required::<String>(row, "outcome")?.as_str() {
                OK => Outcome::ok(body()?),
                ERR => Outcome::err(body()?),
                ABORTED => Outcome::Aborted,
                other => {
                    return Err(corrupt(
                        "outcome",
                        &format!("is `{other}`, not ok, err or aborted"),
                    ))
                }
            };
            Record::Completed(Completed::new(fingerprint, outcome, live_until))
        }
        other => {
            return Err(corrupt(
                "state",
                &format!("is `{other}`, not {IN_PROGRESS} or {COMPLETED}"),
            ))
        }
    };
    let taken_over_from = optional::<String>(row, "taken_over_from")?.map(OwnerToken::from);
    Ok(Decoded {
        record,
        taken_over_from,
    })
}

/// The steps of an in-progress row: none when `steps` is null. A completed row's step columns
/// are never read: its steps ended with the call.
fn decode_steps(row: &PgRow) -> Result<Steps, StoreError> {
    let Some(text) = optional::<String>(row, "steps")? else {
        return Ok(Steps::new());
    };
    let values = steps::parse(&text).map_err(|why| corrupt("steps", &why))?;
    let kept_until = Timestamp::from_millis(whole(row, "steps_kept_until")?);
    Ok(values
        .into_iter()
        .fold(Steps::new(), |steps, (name, value)| {
            steps.with_step(name, value)
        })
        .with_kept_until(kept_until))
}

fn corrupt(column: &str, what: &str) -> StoreError {
    StoreError::Corrupt(format!("column `{column}` {what}"))
}

fn optional<T>(row: &PgRow, column: &str) -> Result<Option<T>, StoreError>
where
    T: for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    row.try_get::<Option<T>, _>(column)
        .map_err(|error| corrupt(column, &format!("cannot be read: {error}")))
}

fn required<T>(row: &PgRow, column: &str) -> Result<T, StoreError>
where
    T: for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    optional(row, column)?.ok_or_else(|| corrupt(column, "is null"))
}

/// A `bigint` column that must hold a number of zero or more.
fn whole(row: &PgRow, column: &str) -> Result<u64, StoreError> {
    let value = required::<i64>(row, column)?;
    u64::try_from(value).map_err(|_| corrupt(column, &format!("is negative ({value})")))
}
