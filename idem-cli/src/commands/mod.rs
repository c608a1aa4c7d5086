//! The commands: each reads (or changes) the store and prints what it found.

mod forget;
mod functions;
mod get;
mod key;
pub(crate) mod key_args;
mod list;
mod purge;
mod release;
mod scope;
pub(crate) mod stats;

use idem_core::Key;

use crate::args::{Cli, Command};
use crate::connect::connect;
use crate::failure::Failure;
use crate::output::Output;

/// Runs the command `cli` asks for.
pub(crate) async fn run(cli: Cli) -> Result<(), Failure> {
    let out = Output::new(cli.json);
    // The key first: a mistyped key is a usage error, whatever the store says.
    let key = match &cli.command {
        Command::Get { key, .. } | Command::Forget { key, .. } | Command::Release { key, .. } => {
            Some(parse_key(key)?)
        }
        Command::Scope {
            principal,
            secret_env,
        } => {
            let scoped = match principal {
                true => scope::Scoped::Principal,
                false => scope::Scoped::Authorization,
            };
            return scope::scope(scoped, secret_env.as_deref(), &out);
        }
        Command::Key { of } => return key::key(of, &cli.store.namespace, &out),
        _ => None,
    };
    // The keyring too: a keyring that can't be read is a usage error, before any store.
    let keyring = match &cli.command {
        Command::Get { keyring_file, .. } => crate::keyring::load(keyring_file.as_deref())?,
        _ => None,
    };
    if matches!(cli.command, Command::Get { raw: true, .. }) && cli.json {
        return Err(Failure::usage(
            "--raw writes the outcome's bytes alone, and --json a document: pass one of them",
        ));
    }
    let connected = connect(&cli.store).await?;
    let namespace = &cli.store.namespace;
    match (cli.command, key) {
        (Command::Get { raw, .. }, Some(key)) => {
            get::get(&connected, &key, raw, keyring.as_ref(), &out).await
        }
        (Command::Forget { yes, running, .. }, Some(key)) => {
            let consent = forget::Consent { yes, running };
            forget::forget(&connected, &key, consent, &out).await
        }
        (Command::Release { yes, .. }, Some(key)) => {
            release::release(&connected, &key, yes, &out).await
        }
        (Command::List(args), _) => list::list(&connected, namespace, &args, &out).await,
        (Command::Functions, _) => functions::functions(&connected, &out).await,
        (Command::Stats { function }, _) => {
            stats::stats(&connected, namespace, function.as_deref(), &out).await
        }
        (Command::PurgeExpired { batch }, _) => {
            let prefix = cli.store.prefix.as_deref();
            purge::purge(&connected, prefix, batch, &out).await
        }
        (Command::Scope { .. } | Command::Key { .. }, _) => {
            unreachable!("a scope or a key needs no store, and is printed above")
        }
        (Command::Get { .. } | Command::Forget { .. } | Command::Release { .. }, None) => {
            unreachable!("the key of a keyed command is parsed above")
        }
    }
}

/// `text` as a key, or a usage failure that says how keys read.
fn parse_key(text: &str) -> Result<Key, Failure> {
    Key::parse(text).map_err(|error| Failure::from_error(error, ""))
}

/// The listing prefix of `function` in `namespace`, or every key.
fn prefix(namespace: &str, function: Option<&str>) -> String {
    function
        .map(|function| Key::function_prefix(namespace, function))
        .unwrap_or_default()
}

/// The result of printing, as a command's: a failed write fails the command, but a closed pipe
/// does not (`idem list | head`: the reader has what it wanted).
fn printed(result: std::io::Result<()>) -> Result<(), Failure> {
    match result {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(error) => Err(Failure::failed(format!(
            "could not write the output: {error}"
        ))),
    }
}
