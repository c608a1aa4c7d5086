//! The statements the store sends, spelt out once per table.

/// An SQL identifier in double quotes, with embedded quotes doubled, so that any table or
/// schema name is safe to splice into a statement.
pub(crate) fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The columns of a record, in the order [`codec`](super::codec) reads them. `steps` is read as
/// text, which [`steps::parse`](super::steps::parse) decodes.
const RECORD_COLUMNS: &str = "state, owner, fingerprint, live_until_ms, fencing_token, attempt, \
     outcome, body, taken_over_from, steps::text AS steps, steps_kept_until";

/// [`RECORD_COLUMNS`] as the reservation reads them: `body` is measured before it is read
/// (`octet_length` reads a stored value's size from its header), and left out (null) when it
/// is longer than `$9`, the call's longest outcome (null for any), with its length in
/// `body_length` for [`check_outcome_len`](idem_core::store::check_outcome_len) to refuse.
/// This is the PostgreSQL copy of idem-core's size rule: the comparison is made here so that
/// an oversized body never leaves the server.
const BOUNDED_RECORD_COLUMNS: &str = "state, owner, fingerprint, live_until_ms, fencing_token, \
     attempt, outcome, CASE WHEN octet_length(body) > $9::bigint THEN NULL ELSE body END AS body, \
     octet_length(body)::bigint AS body_length, taken_over_from, steps::text AS steps, \
     steps_kept_until";

/// Whether the row (its columns prefixed by `row`) holds at least one step.
fn has_steps(row: &str) -> String {
    format!("coalesce({row}steps, '{{}}'::jsonb) <> '{{}}'::jsonb")
}

/// Whether the row holds no step that still holds the key at `now` (a parameter), the
/// negation of [`Steps::hold_key`](idem_core::store::Steps::hold_key).
fn no_live_steps(row: &str, now: &str) -> String {
    format!(
        "(NOT {} OR coalesce({row}steps_kept_until, 0) <= {now})",
        has_steps(row)
    )
}

/// Every statement of a store, for one table.
#[derive(Debug)]
pub(crate) struct Statements {
    /// The index, schema-qualified and quoted, as `catalog` takes it.
    pub(crate) index: String,
    pub(crate) catalog: String,
    pub(crate) migrate_lock: String,
    pub(crate) create_table: String,
    pub(crate) add_step_columns: String,
    pub(crate) create_index: String,
    pub(crate) reserve: String,
    pub(crate) reserve_locking: String,
    pub(crate) complete: String,
    pub(crate) complete_in_transaction: String,
    pub(crate) release: String,
    pub(crate) record_step: String,
    pub(crate) renew: String,
    pub(crate) get: String,
    /// Whether a row is stored under `$1`, reading none of its values.
    pub(crate) contains: String,
    pub(crate) delete: String,
    /// The delete of the in-progress row under `$1` held by owner `$2` with fencing token `$3`.
    pub(crate) delete_held: String,
    /// The delete of the completed row under `$1` of fingerprint `$2` expiring at `$3`.
    pub(crate) delete_completed: String,
    /// The purge: `$1` now, `$2` the abandonment threshold, `$3` how many rows, `$4` the
    /// store's stored prefix (only its rows are deleted).
    pub(crate) purge: String,
    /// The purge from a cursor: `$1` to `$4` as `purge`'s, `$5` the stored key judged last
    /// (empty for the first). Replies how many rows went and the greatest key it took.
    pub(crate) purge_from: String,
    /// Whether the `key` column sorts byte by byte: `$1` the table.
    pub(crate) list_bytewise: String,
    /// A page of a listing as a range of the primary key: `$1` the cursor, `$2` the prefix,
    /// `$3` the least text above every text it starts, `$4` how many rows.
    pub(crate) list_range: String,
    /// A page of a listing in any collation: `$1` the cursor, `$2` the prefix, `$3` how many.
    pub(crate) list_walk: String,
}

impl Statements {
    /// The statements on `table` in `schema`.
    pub(crate) fn new(schema: &str, table: &str) -> Self {
        let t = format!("{}.{}", quote_identifier(schema), quote_identifier(table));
        let index = quote_identifier(&super::names::index_name(table));
        Statements {
            index: format!("{}.{index}", quote_identifier(schema)),
            catalog: "SELECT to_regclass($1) IS NOT NULL, \
                 (SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass($1) \
                 AND attname IN ('steps', 'steps_kept_until') AND NOT attisdropped), \
                 to_regclass($2) IS NOT NULL"
                .to_owned(),
            migrate_lock: "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))".to_owned(),
            create_table: create_table(&t),
            add_step_columns: format!(
                "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS steps jsonb, \
                 ADD COLUMN IF NOT EXISTS steps_kept_until bigint"
            ),
            create_index: format!("CREATE INDEX IF NOT EXISTS {index} ON {t} (live_until_ms)"),
            reserve: reserve(&t),
            reserve_locking: reserve_locking(&t),
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
                 WHERE key = $1 AND state = 'in_progress' AND fencing_token = $2 \
                 AND owner = $5"
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
            contains: format!("SELECT 1 FROM {t} WHERE key = $1"),
            delete: format!("DELETE FROM {t} WHERE key = $1"),
            // The PostgreSQL copy of idem-core's `is_same_record`.
            delete_held: format!(
                "DELETE FROM {t} WHERE key = $1 AND state = 'in_progress' AND owner = $2 \
                 AND fencing_token = $3"
            ),
            delete_completed: format!(
                "DELETE FROM {t} WHERE key = $1 AND state = 'completed' AND fingerprint = $2 \
                 AND live_until_ms = $3"
            ),
            purge: format!(
                "DELETE FROM {t} WHERE key IN (SELECT key FROM {t} \
                 WHERE starts_with(key, $4) \
                 AND ((state = 'completed' AND live_until_ms <= $1) \
                 OR (state = 'in_progress' AND live_until_ms <= $2 AND {})) \
                 LIMIT $3 FOR UPDATE SKIP LOCKED)",
                no_live_steps("", "$1")
            ),
            purge_from: format!(
                "WITH taken AS (SELECT key, ctid FROM {t} \
                 WHERE key > $5 AND starts_with(key, $4) \
                 AND ((state = 'completed' AND live_until_ms <= $1) \
                 OR (state = 'in_progress' AND live_until_ms <= $2 AND {})) \
                 ORDER BY key LIMIT $3 FOR UPDATE SKIP LOCKED), \
                 gone AS (DELETE FROM {t} WHERE ctid = ANY (ARRAY(SELECT ctid FROM taken)) \
                 RETURNING 1) \
                 SELECT (SELECT count(*) FROM gone), (SELECT max(key) FROM taken)",
                no_live_steps("", "$1")
            ),
            list_bytewise: LIST_BYTEWISE.to_owned(),
            list_range: format!(
                "SELECT key, {RECORD_COLUMNS} FROM {t} \
                 WHERE key > $1 AND key >= $2 AND key < $3 AND starts_with(key, $2) \
                 ORDER BY key LIMIT $4"
            ),
            list_walk: format!(
                "SELECT key, {RECORD_COLUMNS} FROM {t} \
                 WHERE key > $1 AND starts_with(key, $2) ORDER BY key LIMIT $3"
            ),
        }
    }
}

/// Whether the table's `key` column (`$1` the table, quoted) compares text byte by byte: its
/// collation, or the database's when it has the default, is libc's `C` or `POSIX`. Then the
/// keys that start with a prefix are one range of the primary key's index. Any other collation
/// (`en_US.UTF-8`, ICU, the builtin provider's) is judged not to, which only costs speed. The
/// database's provider is read through `to_jsonb`, which gives null before PostgreSQL 15 (whose
/// databases only have libc's) rather than failing on the missing column.
const LIST_BYTEWISE: &str = "SELECT CASE c.collprovider \
     WHEN 'd' THEN (SELECT coalesce(to_jsonb(d) ->> 'datlocprovider', 'c') = 'c' \
         AND d.datcollate IN ('C', 'POSIX') \
         FROM pg_database d WHERE d.datname = current_database()) \
     WHEN 'c' THEN c.collcollate IN ('C', 'POSIX') \
     ELSE false END \
     FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation \
     WHERE a.attrelid = to_regclass($1) AND a.attname = 'key' AND NOT a.attisdropped";

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
/// lease ended ([`InProgress::released`](idem_core::store::InProgress::released)), any other is
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

/// The columns a claim writes and their values, shared by both reservation statements:
/// `$1` key, `$2` owner, `$3` fingerprint, `$4` lease deadline, `$5` fencing token, `$6`
/// attempt. A takeover counts the attempt and fencing token on from the old row (`r`), and
/// keeps its steps when the fingerprint is the same.
fn claim_columns() -> Vec<(&'static str, String)> {
    let same_call = "r.state = 'in_progress' AND r.fingerprint = excluded.fingerprint";
    vec![
        ("state", "'in_progress'".into()),
        ("owner", "excluded.owner".into()),
        ("fingerprint", "excluded.fingerprint".into()),
        ("live_until_ms", "excluded.live_until_ms".into()),
        (
            "fencing_token",
            "CASE WHEN r.state = 'in_progress' \
             THEN greatest(excluded.fencing_token, r.fencing_token + 1) \
             ELSE excluded.fencing_token END"
                .into(),
        ),
        (
            "attempt",
            "CASE WHEN r.state <> 'in_progress' THEN excluded.attempt \
             WHEN r.fingerprint = excluded.fingerprint THEN r.attempt + 1 ELSE 1 END"
                .into(),
        ),
        ("outcome", "NULL".into()),
        ("body", "NULL".into()),
        (
            "taken_over_from",
            "CASE WHEN r.state = 'in_progress' THEN r.owner END".into(),
        ),
        ("steps", format!("CASE WHEN {same_call} THEN r.steps END")),
        (
            "steps_kept_until",
            format!("CASE WHEN {same_call} THEN r.steps_kept_until END"),
        ),
        ("created_at", "now()".into()),
        ("updated_at", "now()".into()),
    ]
}

/// Whether the existing row `r` is free for the claim: an expired completed record, or an
/// in-progress record of another owner whose lease passed, with the claim's fingerprint or
/// abandoned (a grace past its lease, with no step kept at `$7`; `$8` is now less the grace).
/// The SQL copy of idem-core's `judge_reserve`, kept in the statement so that deciding and
/// writing are atomic; the conformance kit's table of reserve cases checks that both agree.
fn row_is_free() -> String {
    let abandoned = format!("r.live_until_ms <= $8 AND {}", no_live_steps("r.", "$7"));
    format!(
        "((r.state = 'completed' AND r.live_until_ms <= $7) \
         OR (r.state = 'in_progress' AND r.owner <> excluded.owner AND r.live_until_ms <= $7 \
         AND (r.fingerprint = excluded.fingerprint OR ({abandoned}))))"
    )
}

/// The upsert both reservation statements start with.
fn insert_claim(t: &str) -> String {
    format!(
        "INSERT INTO {t} AS r (key, state, owner, fingerprint, live_until_ms, fencing_token, attempt)
    VALUES ($1, 'in_progress', $2, $3, $4, $5, $6)
    ON CONFLICT (key) DO UPDATE SET"
    )
}

/// The reservation, in one statement: `$1` to `$6` the claim ([`claim_columns`]), `$7` now,
/// `$8` now less the lease grace, `$9` the call's longest outcome
/// ([`BOUNDED_RECORD_COLUMNS`]).
///
/// The upsert writes the claim when the key has no row or its row is free ([`row_is_free`]).
/// Otherwise it writes nothing but still locks the row, and the second branch returns it, read
/// with `FOR UPDATE` so that a row changed since the statement's snapshot is read as it is
/// now. A row inserted after the snapshot is invisible to that read, and the statement then
/// returns nothing: [`reserve_locking`] answers instead.
fn reserve(t: &str) -> String {
    let set = claim_columns()
        .into_iter()
        .map(|(column, value)| format!("{column} = {value}"))
        .collect::<Vec<_>>()
        .join(",\n        ");
    format!(
        "WITH claimed AS (
    {insert}
        {set}
    WHERE {free}
    RETURNING true AS claimed, {BOUNDED_RECORD_COLUMNS}
)
SELECT * FROM claimed
UNION ALL
SELECT * FROM (
    SELECT false AS claimed, {BOUNDED_RECORD_COLUMNS} FROM {t}
    WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM claimed)
    FOR UPDATE
) AS existing",
        insert = insert_claim(t),
        free = row_is_free(),
    )
}

/// The reservation that always returns the row, for when [`reserve`] returned none: the
/// upsert updates the row it conflicts with in every case, to the claim when it is free and
/// to itself otherwise, and `RETURNING` gives the row as it now is, visible or not to the
/// statement's snapshot. No concurrent insert or delete can make it come back empty, so a key
/// whose row is deleted and inserted over and over (failing calls released in a loop) costs
/// at most these two statements. It is not the first choice because it writes a new version
/// of the row even when it only reads it (a replay, a conflict).
///
/// The claim is the statement's when the row is the claim's owner's and was written by this
/// transaction (`updated_at` is its `now()`); a row this owner claimed earlier, whose answer
/// was lost, is found as it stands, as the first statement finds it.
fn reserve_locking(t: &str) -> String {
    let free = row_is_free();
    let set = claim_columns()
        .into_iter()
        .map(|(column, value)| {
            format!("{column} = CASE WHEN {free} THEN {value} ELSE r.{column} END")
        })
        .collect::<Vec<_>>()
        .join(",\n        ");
    format!(
        "{insert}
        {set}
RETURNING owner = $2 AND updated_at = now() AS claimed, {BOUNDED_RECORD_COLUMNS}",
        insert = insert_claim(t),
    )
}
