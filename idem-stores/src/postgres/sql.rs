//! The statements the store sends, spelt out once per table.

/// An SQL identifier in double quotes, with embedded quotes doubled, so that any table or
/// schema name is safe to splice into a statement.
pub(crate) fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The columns of a record, in the order [`row`](super::row) reads them.
const RECORD_COLUMNS: &str =
    "state, owner, fingerprint, live_until_ms, fencing_token, attempt, outcome, body, taken_over_from";

/// Every statement of a store, for one table.
#[derive(Debug)]
pub(crate) struct Statements {
    pub(crate) create_table: String,
    pub(crate) create_index: String,
    pub(crate) reserve: String,
    pub(crate) complete: String,
    pub(crate) complete_in_transaction: String,
    pub(crate) release: String,
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
            create_index: format!("CREATE INDEX IF NOT EXISTS {index} ON {t} (live_until_ms)"),
            reserve: reserve(&t),
            complete: format!(
                "UPDATE {t} SET state = 'completed', fingerprint = $3, live_until_ms = $4, \
                 outcome = $5, body = $6, updated_at = now() \
                 WHERE key = $1 AND owner = $2 AND (state = 'in_progress' \
                 OR (state = 'completed' AND fingerprint = $3 AND outcome = $5 \
                 AND body IS NOT DISTINCT FROM $6))"
            ),
            complete_in_transaction: format!(
                "UPDATE {t} SET state = 'completed', live_until_ms = $3, outcome = 'ok', \
                 body = $4, updated_at = now() \
                 WHERE key = $1 AND state = 'in_progress' AND fencing_token = $2"
            ),
            release: format!(
                "DELETE FROM {t} WHERE key = $1 AND owner = $2 AND state = 'in_progress'"
            ),
            renew: format!(
                "UPDATE {t} SET live_until_ms = $3, updated_at = now() \
                 WHERE key = $1 AND owner = $2 AND state = 'in_progress'"
            ),
            get: format!("SELECT {RECORD_COLUMNS} FROM {t} WHERE key = $1"),
            delete: format!("DELETE FROM {t} WHERE key = $1"),
            purge: format!(
                "DELETE FROM {t} WHERE key IN (SELECT key FROM {t} \
                 WHERE (state = 'completed' AND live_until_ms <= $1) \
                 OR (state = 'in_progress' AND live_until_ms <= $2) \
                 LIMIT $3 FOR UPDATE SKIP LOCKED)"
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
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
)"
    )
}

/// The reservation, in one statement: `$1` key, `$2` owner, `$3` fingerprint, `$4` lease
/// deadline, `$5` fencing token, `$6` attempt, `$7` now, `$8` now less the lease grace.
///
/// The upsert writes the claim when the key has no row, or when its row is free (an expired
/// completed record, an in-progress record of another owner whose lease passed with the same
/// fingerprint or that is abandoned), counting the takeover's attempt and fencing token on
/// from the old row. Otherwise it writes nothing but still locks the row, and the second
/// branch returns it, read with `FOR UPDATE` so that a row changed since the statement's
/// snapshot is read as it is now.
fn reserve(t: &str) -> String {
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
        created_at = now(),
        updated_at = now()
    WHERE (r.state = 'completed' AND r.live_until_ms <= $7)
       OR (r.state = 'in_progress' AND r.owner <> excluded.owner AND r.live_until_ms <= $7
           AND (r.fingerprint = excluded.fingerprint OR r.live_until_ms <= $8))
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
