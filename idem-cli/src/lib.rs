//! The `idem` command: reads and fixes idempotency records on every store, by URL.
//!
//! ```console
//! $ cargo install idem-cli
//! $ export IDEM_STORE=redis://127.0.0.1:6379
//! $ idem list --state in-progress
//! $ idem get 'idem|shop::payments::charge|-|order-42'
//! $ idem release 'idem|shop::payments::charge|-|order-42' --yes
//! ```
//!
//! # Commands
//!
//! | command | what it does |
//! |---|---|
//! | `idem get KEY [--raw] [--keyring-file PATH]` | shows the record under `KEY` and its outcome decoded (see [What a record answers](#what-a-record-answers)); `--raw` writes the outcome's bytes alone |
//! | `idem list [--function F] [--scope S] [--state in-progress\|completed] [--limit N \| --all] [--json [--envelope]]` | lists records, following the store's pages until `N` (default 100) matched; `--scope S` keeps the keys in scope `S`, as `idem scope` prints it |
//! | `idem forget KEY --yes [--running]` | deletes the record under `KEY`; the next call runs the function again. Without `--yes`, shows the record, says what it would delete and refuses; a key held by a call (in progress) needs `--running` too |
//! | `idem release KEY --yes` | frees a key held by an in-progress call, fenced on the owner it read; without `--yes`, shows the record and refuses |
//! | `idem purge-expired [--batch N]` | deletes expired completed records and abandoned reservations under `--prefix`, `N` (default 1000) per request, each batch going on where the previous one stopped (on DynamoDB, one `Scan` of `N` items a batch, so the table is read once), until none is left; says what it is about to delete on stderr, then prints how many. No `--yes`: what it deletes no longer counts, and cron runs it |
//! | `printf '%s' "$AUTHORIZATION" \| idem scope [--secret-env VAR]` | prints the scope a request with that `Authorization` stores its keys under, as idem-http computes it ([`idem_protocol::scope`]), keyed with the secret in the environment variable `VAR` as `scope_secret` keys it; reads the credential from standard input, never the command line; needs no store |
//! | `printf '%s' "$PRINCIPAL" \| idem scope --principal [--secret-env VAR]` | prints the scope a principal's keys are stored under when the service scopes by principal (`scope_from_extension`, `scope`): the principal itself, or its HMAC under the secret in `VAR` as `scope_secret` keys it; needs no store |
//! | `idem key lambda --name N --expression EXPR [--secret-env VAR] [--principal P] [--unscoped-shared] [--allow-partial-keys] < event.json` | prints the key idem-lambda's `IdempotentHandler` stores the event on standard input under, by idem-lambda's own code ([`idem_lambda::IdempotentHandlerBuilder::stored_key`]): `idem get "$(idem key lambda ...)"` finds its record; needs no store |
//! | `idem stats [--function F]` | counts records by function and state, over the whole listing |
//! | `idem functions` | prints the names of the functions that have records, one a line, as `--function` takes them (`--json`: `[{"function": F, "records": N}]`) |
//!
//! One credential's records: `idem scope` prints the scope idem-http stores a request's key
//! under, and `list --scope` takes it as printed:
//!
//! ```console
//! $ idem list --scope "$(printf '%s' "$AUTHORIZATION" | idem scope --secret-env SCOPE_SECRET)"
//! ```
//!
//! (`--secret-env` only when the service sets `scope_secret`). A key's scope is its third
//! slot, `=SCOPE` (`-` for none); `list --json` shows it as `scope`.
//!
//! A function's name is the one its keys hold: an `#[idempotent]` function's is its module
//! path and name, `concat!(module_path!(), "::charge")`, so `charge` in the module `payments`
//! of the crate `shop` is `shop::payments::charge` (unless the attribute sets `name = ".."`);
//! an idem-http layer's is `http` (unless `.name(..)` sets one). `idem functions` prints the
//! names a store holds.
//!
//! Keys are written as idem prints them (in errors, logs and `idem list`):
//! `namespace|function|scope|parts`, or `namespace|#digest` under a key digest. Quote them for
//! the shell. `--function F` lists the keys that start with `Key::function_prefix(namespace, F)`,
//! in `--namespace` (default `idem`). `--state in-progress` keeps the records held by a call
//! (running, lease passed, released with steps, abandoned); `--state completed` the others
//! (completed, stored error, aborted, expired). A record the store can't read is listed as
//! `corrupt` (and left out when `--state` is given), and so is anything stored under the
//! prefix whose stored key is no idempotency key (not UTF-8, over 1024 bytes, without a `|`):
//! no writer can hide an entry from `list` and `stats`. Such a key is printed escaped, in the
//! table and in `--json` alike: a byte that is not UTF-8 as `\xNN`, a control character as
//! `\x1b` or `\u{202e}`, a backslash as `\\`; `stats` counts it as `corrupt`, under the
//! function its second `|`-separated slot names (`null` when there is none).
//!
//! `release` is for a key held by a call that will never finish (its process was killed in a
//! deploy, say) when waiting for its lease to pass is not an option. The next call with the
//! key runs the function again, so check the held call's effect first. `forget` is for a
//! corrupt record, or a stored result that must not be replayed; it refuses a held key
//! unless given `--running`, since a running call would lose its record and its recorded
//! steps would be forgotten (`release` is the fenced way to free one). The
//! [runbook](https://github.com/idem-rs/idem/blob/main/docs/runbook.md) walks through both.
//!
//! `idem` reads records as stored: with sealing on, values stay sealed (their sizes are
//! shown, not their contents) unless `get` is given the keyring, and under a key digest keys
//! are listed and given as their digests (`namespace|#digest`).
//!
//! # What a record answers
//!
//! `idem get KEY` shows, after the record's details, a completed record's outcome decoded:
//! JSON (what `#[idempotent]`, `run` and `run_with_policy` store: the `Ok` or stored `Err` value)
//! pretty-printed, its numbers as stored; a response stored by idem-http's layer, read by
//! idem-http's own decoder ([`idem_http::RecordedResponse`]), as its status, headers,
//! trailers and the first 4 KiB of its body (UTF-8 as text, other bytes as `\xNN`; how many
//! bytes are not shown; a body in a content coding is named by its coding, not printed);
//! anything else as its first 4 KiB, escaped. What a terminal would obey is escaped
//! everywhere (in JSON, as `\u001b`, so that it stays JSON). `--raw` writes the outcome's bytes
//! exactly as stored and nothing else (a sealed one opened); a record without an outcome
//! writes nothing and exits 4.
//!
//! A sealed outcome opens with the service's keyring, read by idem-core's own
//! [`Keyring::from_file`](idem_core::seal::Keyring::from_file) from `--keyring-file PATH`, else
//! by [`Keyring::from_env`](idem_core::seal::Keyring::from_env) from `IDEM_KEYRING`: one
//! `ID=BASE64KEY` entry a line, the current key first. Never from an argument, which other
//! users of the machine see. It is opened as the service opens it
//! ([`Keyring::open_outcome`](idem_core::seal::Keyring::open_outcome)). Without a keyring, a
//! sealed outcome says so and names its key's id (exit 0; `--raw` exits 2); with one that does
//! not open it, the record is printed, the reason said, and `get` exits 1; a keyring that
//! can't be read exits 2, naming the entry at fault, never its keys. An outcome stored
//! unsealed while a keyring is given is shown, with a note: a service with sealing on refuses
//! it.
//!
//! `list`, `stats` and `purge-expired` need a store that can list its records; `get`, `forget`
//! and `release` work on every store.
//!
//! # Stores
//!
//! `--store URL`, or the `IDEM_STORE` environment variable:
//!
//! | URL | store | options |
//! |---|---|---|
//! | `redis://[user:password@]host:port[/db]` | one Redis server | `--prefix` |
//! | `redis+cluster://host:port,host:port` | a Redis Cluster (the user, path and query apply to every node) | `--prefix` |
//! | `postgres://user:password@host:port/db`, `postgresql://...` (`?sslmode=require` for TLS) | PostgreSQL | `--table` (default `idem_records`), `--schema` (default `public`), `--prefix` |
//! | `dynamodb://TABLE` | DynamoDB | `--region` (default `AWS_REGION`, then `AWS_DEFAULT_REGION`), `--endpoint` (DynamoDB Local, say), `--prefix`, `--attribute FIELD=NAME` |
//!
//! `--prefix` is the store's own key prefix, as the service passes it to the store's builder
//! (default: the store's default, none). Every option of the stores' builders that changes
//! where records are has its flag: `--prefix` (all), `--table` and `--schema` (PostgreSQL),
//! `--attribute FIELD=NAME` (DynamoDB's `AttributeNames`, once per attribute named otherwise
//! than the default; fields `key`, `state`, `owner`, `fingerprint`, `live_until`,
//! `fencing_token`, `attempt`, `ttl`, `outcome`, `body`, `steps`, `steps_kept_until`,
//! `steps_ttl`). A table shared with Powertools, say, whose service sets
//! `AttributeNames { key: "id", ttl: "expiration", state: "status", body: "data",
//! fingerprint: "validation", live_until: "in_progress_expiration", .. }`, is read with
//!
//! ```console
//! $ idem --store dynamodb://idempotency --attribute key=id --attribute ttl=expiration \
//!     --attribute state=status --attribute body=data --attribute fingerprint=validation \
//!     --attribute live_until=in_progress_expiration list
//! ```
//!
//! (the test `other_attribute_names_are_named_with_attribute` runs it). When `get`, `list`
//! or `stats` find a DynamoDB table whose partition key, or whose items' attributes, are
//! named otherwise than the command reads them, they say which `--attribute` is missing
//! (exit 2) instead of listing nothing or `corrupt` records. DynamoDB credentials come from the AWS SDK's default chain, as
//! the `aws` command finds them: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
//! `AWS_SESSION_TOKEN`; the profile `AWS_PROFILE` (or `default`) of `~/.aws/config` and
//! `~/.aws/credentials` (`AWS_CONFIG_FILE`, `AWS_SHARED_CREDENTIALS_FILE`), SSO (after `aws sso
//! login`) and `credential_process` included; web identity; a container's or an instance's
//! role. The region: `--region`, else `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's.
//! `--endpoint` takes DynamoDB elsewhere; the credential providers still reach AWS.
//!
//! No secret of a URL is ever printed: not its password (the user info runs to the URL's last
//! `@`, so a password with a raw `/` or `?` is hidden too), nor the value of a query parameter
//! whose name reads like a secret (`password`, `sslpassword`, `token`, `secret`, `auth`,
//! `credentials`, `sig`, `x-amz-signature`, names ending in `key`...), whatever the scheme.
//! The drivers' messages are searched for them too, and for those of `--endpoint`.
//!
//! The feature `tls` (on by default) reaches Redis (`rediss://`, `rediss+cluster://`),
//! PostgreSQL (`sslmode=require`) and DynamoDB over TLS with rustls, on ring, trusting the
//! system's root certificates (a `rediss://` URL ending in `#insecure` skips the check, for
//! a server with a certificate of its own). Built without it, `rediss://` URLs are refused
//! with exit code 2.
//!
//! # Output
//!
//! Results go to stdout, notes and errors to stderr. By default, people's form: aligned
//! details for one record, a table for a listing (key, function, state, attempt, fencing
//! token, lease or expiry as RFC 3339 UTC and `in 3m` / `4m ago`, bytes).
//!
//! With `--json`, one JSON document per command, for scripts:
//!
//! - `get`, `forget`, `release`: the record (as it was, for `forget` and `release`; as it is
//!   now, when `forget` or `release` refuses); `null` where there is none to show;
//! - `list`: an array of records. When `--limit` (default 100) cut the listing off, a note
//!   on stderr says so (`N records shown; more match`) and the array holds the first `N`;
//!   with `--envelope`, the document is `{"records": [...], "truncated": BOOL, "limit": N}`
//!   instead (`limit` is `null` with `--all`), so a script sees it in the document itself.
//!   `--all` follows the listing to its end;
//! - `stats`: `{"total": N, "by_state": {STATE: N}, "functions": [{"function": F, "total": N,
//!   "by_state": {STATE: N}}]}` (`function` is `null` for keys stored as digests);
//! - `purge-expired`: `{"purged": N}`.
//! - `scope`: `{"scope": "..."}`.
//!
//! Why `list --json` stays a bare array, and `--envelope` is asked for: the array is what
//! scripts parse today, and changing its shape would break every one of them silently
//! (`jq '.[]'` on an object yields its values, not an error). A cut-off listing is not a
//! failure either (`--limit 10` asks for ten), so it keeps exit code 0. A script that must
//! not miss a record passes `--all`; one that wants a bounded sample and to know whether it
//! is the whole passes `--envelope` and reads `truncated`.
//!
//! A command that fails prints its message on stderr and no document (except a `forget` or
//! `release` refusal, which prints the record as it is): scripts read the exit code.
//!
//! A record's fields, always present, `null` where they do not apply:
//!
//! | field | what it holds |
//! |---|---|
//! | `key` | the key, as idem prints it; for a `corrupt` entry stored under no idempotency key, that stored key escaped (see above) |
//! | `function` | the function's name, from the key (`null` under a key digest) |
//! | `scope` | the key's scope, as encoded in it (`null` for none) |
//! | `state` | `running`, `lease-passed`, `released`, `abandoned`, `completed`, `stored-error`, `aborted`, `expired`; `corrupt` for a listed record the store can't read |
//! | `owner` | in progress: the owner token of the call holding the key |
//! | `attempt` | in progress: 1, plus one per takeover by the same call |
//! | `fencing_token` | in progress: the fencing token, growing with every reservation |
//! | `lease_until` | in progress: when the lease passes, RFC 3339 UTC (`1970-01-01T00:00:00.000Z` once released with steps) |
//! | `expires_at` | completed: when the record stops being replayed, RFC 3339 UTC |
//! | `steps` | in progress: the names of the recorded steps (`[]` otherwise) |
//! | `stored_bytes` | the bytes of the stored outcome and step values |
//! | `outcome` | completed: `ok`, `err` (a stored error) or `aborted` |
//! | `fingerprint` | the fingerprint of the call's arguments, 64 hex digits |
//! | `error` | a corrupt listed record: why it can't be read (`stored under no idempotency key (...)` for one whose key is none) |
//!
//! `get --json` adds two fields, `null` where the record has no outcome value (in progress,
//! aborted):
//!
//! | field | what it holds |
//! |---|---|
//! | `outcome_format` | `json`, `http`, `bytes`, `sealed` (no keyring given) or `unopened` (the keyring given does not open it) |
//! | `outcome_value` | `json`: the value itself. `http`: `{status, headers, trailers, content_codings, body_bytes, body, body_form, body_truncated, body_not_kept}`: headers and trailers as `[name, value]` pairs; `body` the first 4 KiB, as text when `body_form` is `text` (UTF-8 and no content coding), else in base64; `body_not_kept` why the layer kept no body. `bytes`: `{bytes, base64, truncated}`, the first 4 KiB in base64. `sealed`: `{key_id}`. `unopened`: `{key_id, error}` |
//!
//! # Exit codes
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | failed: the store failed or can't be reached, a record is corrupt, the store can't list; `get` of a sealed outcome the keyring given does not open |
//! | 2 | usage: a bad command line, store URL, keyring or environment (clap's errors too); `release` or `forget` without `--yes`, after showing the record; `get --raw` of a sealed outcome without a keyring |
//! | 3 | the key has no record: `no record under KEY` |
//! | 4 | refused: `release` of a key that is not in progress, or that changed hands; `forget` of a key held by a call without `--running`; the record as it is now is printed; `get --raw` of a record without an outcome |
//!
//! The same codes are [`exit`]'s constants, and `idem --help` lists them.
//!
//! # Where things are
//!
//! The modules stand in layers, each using only those below it:
//!
//! - the ground: [`exit`]'s codes; `failure`, what went wrong and its code; what no message
//!   shows: `redact` (a URL's secrets), `secrets` (hidden from every message), `visible`
//!   (what a terminal would obey, escaped);
//! - the command line, read into a plain description: `args`, with `key_args` and
//!   `attribute_names`; `url`, store URLs; `dynamodb_url`, the options a DynamoDB URL carries;
//! - a store, from that description: `connect`, with `misnamed` and `partition`, what a
//!   DynamoDB table's names and partitions tell;
//! - what the commands read: `listing` walks a store's pages; `outcome` opens and decodes
//!   what a record answers, `keyring` reads the keyring that opens it;
//! - `commands`: one file per command, each saying what it found to a `Printer`;
//! - `output`: the `Printer` of tables, aligned details and JSON documents.
#![warn(missing_docs)]

mod args;
mod attribute_names;
mod commands;
mod connect;
mod dynamodb_url;
pub mod exit;
mod failure;
mod key_args;
mod keyring;
mod listing;
mod misnamed;
mod outcome;
mod output;
mod partition;
#[cfg(test)]
mod readme_commands;
mod redact;
mod secrets;
mod url;
mod visible;

use std::process::ExitCode;

use clap::Parser;

/// Runs `idem` with the process's arguments and environment, and returns its exit code.
pub fn main() -> ExitCode {
    let cli = args::Cli::parse();
    #[cfg(feature = "tls")]
    {
        // One crypto provider for every TLS client: sqlx's and the AWS SDK's.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("idem: could not start the async runtime: {error}");
            return ExitCode::from(exit::FAILED);
        }
    };
    let out = output::Output::new(cli.json);
    match runtime.block_on(commands::run(cli, &out)) {
        Ok(()) => ExitCode::from(exit::DONE),
        Err(failure) => {
            eprintln!("idem: {failure}");
            ExitCode::from(failure.code())
        }
    }
}
