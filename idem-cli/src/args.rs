//! The command line.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// What `idem --help` says before the commands.
const ABOUT: &str = "Inspect and fix idempotency records on Redis, PostgreSQL and DynamoDB";

/// What `idem --help` says after the options.
const AFTER_HELP: &str = "\
Store URLs (--store, or IDEM_STORE):
  redis://[user:password@]host:port[/db]     one Redis server (rediss:// over TLS)
  redis+cluster://host:port,host:port        a Redis Cluster
  postgres://user:password@host:port/db      PostgreSQL (also postgresql://), with --table, --schema
  dynamodb://TABLE                           DynamoDB, with --region, --endpoint, --attribute
                                             FIELD=NAME, --sort-key, or the same in the URL
                                             (?region=..&sort_key=..&attribute.key=id); credentials
                                             from the AWS default chain (environment,
                                             AWS_PROFILE, SSO, roles)

Keys are written as idem prints them (namespace|function|scope|parts): quote them for the shell.
";

/// The `idem` command line.
#[derive(Debug, Parser)]
#[command(
    name = "idem",
    version,
    about = ABOUT,
    after_help = format!("{AFTER_HELP}\n{}", crate::exit::HELP),
    propagate_version = true
)]
pub(crate) struct Cli {
    /// Where the records are, and how to read them.
    #[command(flatten)]
    pub(crate) store: StoreArgs,

    /// Print one JSON document (for `list`, an array) instead of a table.
    #[arg(long, global = true)]
    pub(crate) json: bool,

    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The store's URL and the options that go with it.
#[derive(Clone, Debug, Args)]
pub(crate) struct StoreArgs {
    /// The store's URL: redis://, redis+cluster://host:port,host:port, postgres://,
    /// dynamodb://TABLE.
    #[arg(
        long,
        env = "IDEM_STORE",
        hide_env_values = true,
        global = true,
        value_name = "URL"
    )]
    pub(crate) store: Option<String>,

    /// The store's own key prefix, as the service sets it on the store's builder
    /// [default: the store's default, none].
    #[arg(long, global = true, value_name = "PREFIX")]
    pub(crate) prefix: Option<String>,

    /// The namespace of the service's handle (`Idempotency::with_namespace`), which
    /// `--function` filters in.
    #[arg(long, global = true, value_name = "NAMESPACE", default_value = idem_core::DEFAULT_NAMESPACE)]
    pub(crate) namespace: String,

    /// PostgreSQL: the table the records are in [default: idem_records].
    #[arg(long, global = true, value_name = "TABLE")]
    pub(crate) table: Option<String>,

    /// PostgreSQL: the table's schema [default: public].
    #[arg(long, global = true, value_name = "SCHEMA")]
    pub(crate) schema: Option<String>,

    /// DynamoDB: the table's region [default: AWS_REGION, else AWS_DEFAULT_REGION, else the
    /// profile's].
    #[arg(long, global = true, value_name = "REGION")]
    pub(crate) region: Option<String>,

    /// DynamoDB: another endpoint than AWS's (http://127.0.0.1:8000 for DynamoDB Local).
    #[arg(long, global = true, value_name = "URL")]
    pub(crate) endpoint: Option<String>,

    /// DynamoDB: an attribute the service names otherwise than the default, as its
    /// `AttributeNames` does (key=id, ttl=expiration...); once per attribute. Fields: key,
    /// state, owner, fingerprint, live_until, fencing_token, attempt, ttl, outcome, body,
    /// steps, steps_kept_until, steps_ttl.
    #[arg(long = "attribute", global = true, value_name = "FIELD=NAME",
          value_parser = crate::attribute_names::parse)]
    pub(crate) attributes: Vec<(String, String)>,

    /// DynamoDB: the table's sort key, for a table with a composite primary key (a
    /// single-table design), as the service's `SortKey` names it; with --partition-value
    /// (the sort key holds the records' keys, Powertools' `sort_key_attr` and
    /// `static_pk_value`) or --sort-value (the partition key holds them).
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) sort_key: Option<String>,

    /// DynamoDB, with --sort-key: the partition key value every record has (Powertools'
    /// `static_pk_value`, e.g. `idempotency#payments`).
    #[arg(long, global = true, value_name = "VALUE")]
    pub(crate) partition_value: Option<String>,

    /// DynamoDB, with --sort-key: the sort key value every record has, when the partition key
    /// holds the records' keys.
    #[arg(long, global = true, value_name = "VALUE")]
    pub(crate) sort_value: Option<String>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Show the record under a key, and what it answers: its outcome, decoded.
    ///
    /// After the record's details, a completed record's outcome: JSON (what `#[idempotent]`
    /// and the engine store) pretty-printed; a response stored by idem-http as its status,
    /// headers and the first 4 KiB of its body (a compressed body is named by its coding,
    /// not printed); anything else as its first 4 KiB, escaped. --raw writes the outcome's
    /// bytes alone. A sealed outcome opens with the keyring in the environment variable
    /// IDEM_KEYRING or in --keyring-file, never a command-line argument: one `ID=BASE64KEY`
    /// entry a line, the current key first, as the service's `Keyring::from_text` reads it.
    Get {
        /// The key, as idem prints it.
        #[arg(allow_hyphen_values = true)]
        key: String,

        /// Write the outcome's bytes exactly as stored (opened, if sealed) to stdout, nothing
        /// else: `idem get --raw KEY > outcome.json`. On a terminal, what it would obey
        /// (escape sequences, control characters) is written escaped instead, with a note on
        /// stderr. A record without an outcome (in progress, aborted) exits 4.
        #[arg(long)]
        raw: bool,

        /// The keyring that opens sealed outcomes, in a file (a mounted secret): one
        /// `ID=BASE64KEY` entry a line [default: the environment variable IDEM_KEYRING].
        #[arg(long, value_name = "PATH")]
        keyring_file: Option<std::path::PathBuf>,
    },

    /// List records (the first 100, unless --limit or --all).
    ///
    /// Follows the store's pages until --limit records matched or the listing ends.
    List(ListArgs),

    /// Delete the record under a key (needs --yes; --running too for a held key).
    ///
    /// The next call with the key runs the function again. For a corrupt record, or a stored
    /// result that must not be replayed. Without --yes, shows what would be deleted and exits
    /// 2. A key held by a call (in progress: running, lease passed, released with steps,
    /// abandoned) is refused (exit 4) unless --running is given too: its call, if still
    /// running, loses its record, and its recorded steps are forgotten (`release` is the
    /// fenced way to free a held key).
    Forget {
        /// The key, as idem prints it.
        #[arg(allow_hyphen_values = true)]
        key: String,

        /// Delete it: you checked what the record holds.
        #[arg(long)]
        yes: bool,

        /// Delete it even if a call holds the key (in progress).
        #[arg(long)]
        running: bool,
    },

    /// Free a key held by an in-progress call (needs --yes).
    ///
    /// For a call that will never finish (its process died in a deploy, say). Fenced on the
    /// owner read: a key that completed or changed hands meanwhile is left as it is (exit 4).
    /// The next call with the key runs the function again, so check the held call's effect
    /// first. Without --yes, shows what would be released and exits 2.
    Release {
        /// The key, as idem prints it.
        #[arg(allow_hyphen_values = true)]
        key: String,

        /// Release it: you checked the held call's effect.
        #[arg(long)]
        yes: bool,
    },

    /// Delete expired records and abandoned reservations; print how many.
    ///
    /// Deletes in batches, each going on where the previous one stopped (on DynamoDB, the
    /// table is scanned once, --batch items a Scan), only records that no longer count (an expired record is not replayed, an abandoned reservation is taken
    /// over by the next call), and only under --prefix; says on stderr what it is about to
    /// delete first. Needs no --yes, so that cron jobs run it as they are.
    PurgeExpired {
        /// How many records one request deletes at most.
        #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
        batch: u32,
    },

    /// Print the scope an `Authorization` value (or, with --principal, a principal) puts its
    /// keys in, read from standard input.
    ///
    /// The scope as idem-http's default computes it (idem_protocol::scope): the SHA-256 of
    /// the value with its auth scheme lower-cased, in hex. Reads the value from standard input,
    /// never the command line, which other users of the machine can see:
    /// `printf '%s' "$AUTHORIZATION" | idem scope`. Each line is one value. Needs no store.
    Scope {
        /// Read a principal instead, as the service's scope function gives it
        /// (`scope_from_extension`, `scope`): the scope is the principal itself, or with
        /// --secret-env its keyed digest, as `scope_secret` stores it:
        /// `printf '%s' "$PRINCIPAL" | idem scope --principal --secret-env SCOPE_SECRET`.
        #[arg(long)]
        principal: bool,
        /// Key the scope with the secret in this environment variable, as the service's
        /// `scope_secret(..)` does.
        #[arg(long, value_name = "VAR")]
        secret_env: Option<String>,
    },

    /// Print the key a service stores a record under, from what it keys by (an event):
    /// `idem key lambda --name orders --expression EXPR < event.json`.
    ///
    /// Computed by the service's own code, so that `idem get "$(idem key ...)"` finds the
    /// record of an order id. Needs no store.
    Key {
        /// Which service's keys.
        #[command(subcommand)]
        of: crate::key_args::KeyOf,
    },

    /// Print the names of the functions that have records, one a line.
    ///
    /// As keys spell them and --function takes them: an `#[idempotent]` function's default
    /// name is its module path and name (`shop::payments::charge`); idem-http's layer's is
    /// `http` unless named.
    Functions,

    /// Count records by function and state, over the whole listing.
    Stats {
        /// Only this function's records (its name as keys spell it).
        #[arg(long, value_name = "NAME")]
        function: Option<String>,
    },
}

/// What `list` lists.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Only this function's records (its name as keys spell it), in --namespace.
    #[arg(long, value_name = "NAME")]
    pub(crate) function: Option<String>,

    /// Only records in this state.
    #[arg(long, value_enum, value_name = "STATE")]
    pub(crate) state: Option<StateFilter>,

    /// Only records whose key is in this scope, as `idem scope` prints it for a credential:
    /// `idem list --scope "$(printf '%s' "$AUTHORIZATION" | idem scope)"`.
    #[arg(long, value_name = "SCOPE", allow_hyphen_values = true)]
    pub(crate) scope: Option<String>,

    /// List at most this many records.
    #[arg(long, value_name = "N", default_value_t = 100, conflicts_with = "all",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) limit: u64,

    /// List every matching record.
    #[arg(long)]
    pub(crate) all: bool,

    /// With --json, print an object that says whether the listing was cut off:
    /// `{"records": [...], "truncated": BOOL, "limit": N}` (`limit` is `null` with --all).
    #[arg(long)]
    pub(crate) envelope: bool,
}

/// `--state`: in progress or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum StateFilter {
    /// Held by a call: running, lease passed, released with steps, abandoned.
    InProgress,
    /// Finished: completed, a stored error, aborted, expired.
    Completed,
}

impl StateFilter {
    /// Whether a record that `is_in_progress` passes.
    pub(crate) fn admits(self, is_in_progress: bool) -> bool {
        match self {
            StateFilter::InProgress => is_in_progress,
            StateFilter::Completed => !is_in_progress,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn store_options_go_before_or_after_the_command() {
        let cli =
            Cli::try_parse_from(["idem", "--store", "redis://h", "get", "a|b", "--json"]).unwrap();
        assert_eq!(cli.store.store.as_deref(), Some("redis://h"));
        assert!(cli.json);
        let cli = Cli::try_parse_from([
            "idem",
            "list",
            "--state",
            "in-progress",
            "--store",
            "redis://h",
        ])
        .unwrap();
        let Command::List(list) = cli.command else {
            panic!("list")
        };
        assert_eq!(list.state, Some(StateFilter::InProgress));
        assert_eq!(list.limit, 100);
    }
}
