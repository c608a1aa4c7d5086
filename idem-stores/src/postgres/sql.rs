//! The statements the store sends, spelt out once per table.

/// An SQL identifier in double quotes, with embedded quotes doubled, so that any table or
/// schema name is safe to splice into a statement.
pub(crate) fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The columns of a record, in the order [`row`](super::row) reads them. `steps` is read as
/// text, which [`steps::parse`](super::steps::parse) decodes.
const RECORD_COLUMNS: &str = "state, owner, fingerprint, live_until_ms, fencing_token, attempt, \
     outcome, body, taken_over_from, steps::text AS steps, steps_kept_until";

/// Whether the row (its columns prefixed by `row`) holds at least one step.
fn has_steps(row: &str) -> String {
    format!("coalesce({row}steps, '{{}}'::jsonb) <> '{{}}'::jsonb")
}

/// Whether the row holds no step that still holds the key at `now` (a parameter), the
/// negation of [`Steps::hold_key`](idem_core::Steps::hold_key).
fn no_live_steps(row: &str, now: &str) -> String {
    format!(
        "(NOT {} OR coalesce({row}steps_kept_until, 0) <= {now})",
        has_steps(row)
    )
}

/// Every statement of a store, for one table.
#[derive(Debug)]
pub(crate) struct Statements {
    pub(crate) create_table: String,
    pub(crate) step_columns: String,
    pub(crate) add_step_columns: String,
    pub(crate) create_index: String,
    pub(crate) reserve: String,
    pub(crate) complete: String,
    pub(crate) complete_in_transaction: String,
    pub(crate) release: String,
    pub(crate) record_step: String,
    pub(crate) renew: String,
    pub(crate) get: String,
    pub(crate) delete: String,
    pub(crate) purge: String,
}

impl Statements {
    /// The statements on `table` in `schema`.
    pub(crate) fn new(schema: &str, table: &str) -> Self {
        let t = format!("{}.{}", quote_identifier(schema), quote_identifier(table));
        let index = quote_identifier(&format!("{table}_live_until_idx"));
        Statements {
            create_table: create_table(&t),
            step_columns: "SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass($1) \
                 AND attname IN ('steps', 'steps_kept_until') AND NOT attisdropped"
                .to_owned(),
            add_step_columns: format!(
                "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS steps jsonb, \
                 ADD COLUMN IF NOT EXISTS steps_kept_until bigint"
            ),
            create_index: format!("CREATE INDEX IF NOT EXISTS {index} ON {t} (live_until_ms)"),
            reserve: reserve(&t),
            complete: format!(
                "UPDATE {t} SET state = 'completed', fingerprint = $3, live_until_ms = $4, \
                 outcome = $5, body = $6, steps = NULL, steps_kept_until = NULL, \
                 updated_at = now() \
                 WHERE key = $1 AND owner = $2 AND (state = 'in_progress' \
                 OR (state = 'completed' AND fingerprint = $3 AND outcome = $5 \
                 AND body IS NOT DISTINCT FROM $6))"
            ),
            complete_in_transaction: format!(
                "UPDATE {t} SET state = 'completed', live_until_ms = $3, outcome = 'ok', \
                 body = $4, steps = NULL, steps_kept_until = NULL, updated_at = now() \
                 WHERE key = $1 AND state = 'in_progress' AND fencing_token = $2"
            ),
            release: release(&t),
            record_step: format!(
                "UPDATE {t} SET \
                 steps = coalesce(steps, '{{}}'::jsonb) || jsonb_build_object($3::text, $4::jsonb), \
                 steps_kept_until = greatest(steps_kept_until, $5), updated_at = now() \
                 WHERE key = $1 AND owner = $2 AND state = 'in_progress'"
            ),
            renew: format!(
                "UPDATE {t} SET live_until_ms = $3, updated_at = now() \
                 WHERE key = $1 AND owner = $2 AND state = 'in_progress' \
                 AND NOT (live_until_ms = 0 AND {})",
                has_steps("")
            ),
            get: format!("SELECT {RECORD_COLUMNS} FROM {t} WHERE key = $1"),
            delete: format!("DELETE FROM {t} WHERE key = $1"),
            purge: format!(
                "DELETE FROM {t} WHERE key IN (SELECT key FROM {t} \
                 WHERE (state = 'completed' AND live_until_ms <= $1) \
                 OR (state = 'in_progress' AND live_until_ms <= $2 AND {}) \
                 LIMIT $3 FOR UPDATE SKIP LOCKED)",
                no_live_steps("", "$1")
            ),
        }
    }
}

/// The table, as `migrate` creates it and the module docs show it.
fn create_table(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {t} (
    key             text PRIMARY KEY,
    state           text NOT NULL,
    owner           text NOT NULL,
    fingerprint     text NOT NULL,
    live_until_ms   bigint NOT NULL,
    fencing_token   bigint,
    attempt         bigint,
    outcome         text,
    body            bytea,
    taken_over_from text,
    steps           jsonb,
    steps_kept_until bigint,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
)"
    )
}

/// The release, in one statement: `$1` key, `$2` owner. A record with steps is kept with its
/// lease ended ([`InProgress::released`](idem_core::InProgress::released)), any other is
/// deleted. Both branches see the same snapshot, in which exactly one of them matches; it
/// returns one row when it changed the owner's record, none when the owner no longer holds it.
fn release(t: &str) -> String {
    let owned = "key = $1 AND owner = $2 AND state = 'in_progress'";
    let has_steps = has_steps("");
    format!(
        "WITH kept AS (
    UPDATE {t} SET live_until_ms = 0, updated_at = now()
    WHERE {owned} AND {has_steps}
    RETURNING 1
), deleted AS (
    DELETE FROM {t} WHERE {owned} AND NOT {has_steps}
    RETURNING 1
)
SELECT 1 FROM kept UNION ALL SELECT 1 FROM deleted"
    )
}

/// The reservation, in one statement: `$1` key, `$2` owner, `$3` fingerprint, `$4` lease
/// deadline, `$5` fencing token, `$6` attempt, `$7` now, `$8` now less the lease grace.
///
/// The upsert writes the claim when the key has no row, or when its row is free (an expired
/// completed record, an in-progress record of another owner whose lease passed with the same
/// fingerprint or that is abandoned: a grace past its lease, with no step kept at `$7`),
/// counting the takeover's attempt and fencing token on from the old row, and keeping its
/// steps when the fingerprint is the same. Otherwise it writes nothing but still locks the
/// row, and the second branch returns it, read with `FOR UPDATE` so that a row changed since
/// the statement's snapshot is read as it is now.
fn reserve(t: &str) -> String {
    let same_call = "r.state = 'in_progress' AND r.fingerprint = excluded.fingerprint";
    let abandoned = format!("r.live_until_ms <= $8 AND {}", no_live_steps("r.", "$7"));
    format!(
        "WITH claimed AS (
    INSERT INTO {t} AS r (key, state, owner, fingerprint, live_until_ms, fencing_token, attempt)
    VALUES ($1, 'in_progress', $2, $3, $4, $5, $6)
    ON CONFLICT (key) DO UPDATE SET
        state = 'in_progress',
        owner = excluded.owner,
        fingerprint = excluded.fingerprint,
        live_until_ms = excluded.live_until_ms,
        fencing_token = CASE WHEN r.state = 'in_progress'
            THEN greatest(excluded.fencing_token, r.fencing_token + 1)
            ELSE excluded.fencing_token END,
        attempt = CASE WHEN r.state <> 'in_progress' THEN excluded.attempt
            WHEN r.fingerprint = excluded.fingerprint THEN r.attempt + 1
            ELSE 1 END,
        outcome = NULL,
        body = NULL,
        taken_over_from = CASE WHEN r.state = 'in_progress' THEN r.owner END,
        steps = CASE WHEN {same_call} THEN r.steps END,
        steps_kept_until = CASE WHEN {same_call} THEN r.steps_kept_until END,
        created_at = now(),
        updated_at = now()
    WHERE (r.state = 'completed' AND r.live_until_ms <= $7)
       OR (r.state = 'in_progress' AND r.owner <> excluded.owner AND r.live_until_ms <= $7
           AND (r.fingerprint = excluded.fingerprint OR ({abandoned})))
    RETURNING true AS claimed, {RECORD_COLUMNS}
)
SELECT * FROM claimed
UNION ALL
SELECT * FROM (
    SELECT false AS claimed, {RECORD_COLUMNS} FROM {t}
    WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM claimed)
    FOR UPDATE
) AS existing"
    )
}
