//! The arguments of `key`: what the service keys a record by, for each way records are made.

use clap::{Args, Subcommand};

/// What `idem key --help` says after the options: how a key's data becomes its parts.
pub(crate) const KEY_AFTER_HELP: &str = "\
How idem-lambda writes what the expression selects as the key's parts:
  a string (up to 256 bytes)      the string:                       o-42
  a number, a boolean             its type, then its text:          #number|42, #bool|true
  a list of scalars (their texts  #list, then one part an element:  #list|user-7|o-42
    up to 256 bytes in all)       a string as it is (one starting
                                  with # gets one more #), other
                                  scalars #number:42, #bool:true,
                                  #null
  anything else (an object, a     #sha256, then the SHA-256 of
    nested or longer list, a      idem-core's canonical encoding
    longer string)                of the value (Fingerprint::of),
                                  in hex: compute it with this
                                  command
Every part escapes % and | as %25 and %7C. The scope slot is `=` and the principal as
idem-lambda names it (principal:user-7, sub:...), or its HMAC under the scope secret; `-` for
none.
";

/// The record keys `key` computes.
#[derive(Debug, Subcommand)]
pub(crate) enum KeyOf {
    /// The key idem-lambda's `IdempotentHandler` stores an event under, the event read as
    /// JSON from standard input.
    ///
    /// Computed by idem-lambda's own rule (`IdempotentHandlerBuilder::stored_key`): the
    /// expression's selection as the key's parts, under --name and --namespace, scoped by the
    /// principal of an HTTP event's request context (keyed with the secret in --secret-env
    /// when the function sets `scope_secret`). `idem get "$(idem key lambda ... < event.json)"`
    /// shows the event's record. For an SQS `BatchProcessor`, the event is one message record
    /// (an element of the batch's `Records`), with --principal when its `principal(..)` names
    /// one.
    #[command(after_help = KEY_AFTER_HELP)]
    Lambda(LambdaKeyArgs),
}

/// How an `IdempotentHandler` is set up, as far as its keys go.
#[derive(Debug, Args)]
pub(crate) struct LambdaKeyArgs {
    /// The handler's name: its `.name(..)`, or the Lambda function's name.
    #[arg(long, value_name = "NAME")]
    pub(crate) name: String,

    /// The handler's `event_key` JMESPath expression, as written in the function:
    /// `'[requestContext.authorizer.principalId, powertools_json(body).order_id]'`.
    #[arg(long, value_name = "JMESPATH", allow_hyphen_values = true)]
    pub(crate) expression: String,

    /// Key the principal with the secret in this environment variable, as the handler's
    /// `scope_secret(..)` does.
    #[arg(long, value_name = "VAR", alias = "scope-secret-env")]
    pub(crate) secret_env: Option<String>,

    /// The principal the function's own `.principal(..)` names for the event, in place of the
    /// one its request context names.
    #[arg(long, value_name = "PRINCIPAL", allow_hyphen_values = true)]
    pub(crate) principal: Option<String>,

    /// The handler shares one key space among HTTP events without a principal
    /// (`.unscoped(Unscoped::Shared)`).
    #[arg(long)]
    pub(crate) unscoped_shared: bool,

    /// The handler takes keys with a missing part (`.allow_partial_keys()`).
    #[arg(long)]
    pub(crate) allow_partial_keys: bool,
}
