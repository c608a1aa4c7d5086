//! The commands: each reads (or changes) the store and says what it found to a [`Printer`],
//! which the output layer implements.

mod forget;
mod functions;
mod get;
mod key;
mod list;
pub(crate) mod printer;
mod purge;
mod release;
mod scope;
mod stats;
pub(crate) mod tally;

use idem_core::Key;

use self::printer::Printer;
use crate::args::{Cli, Command};
use crate::connect::connect;
use crate::failure::Failure;

/// Runs the command `cli` asks for, printing with `out`.
pub(crate) async fn run(cli: Cli, out: &dyn Printer) -> Result<(), Failure> {
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
            return scope::scope(scoped, secret_env.as_deref(), out);
        }
        Command::Key { of } => return key::key(of, &cli.store.namespace, out),
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
            get::get(&connected, &key, raw, keyring.as_ref(), out).await
        }
        (Command::Forget { yes, running, .. }, Some(key)) => {
            let consent = forget::Consent { yes, running };
            forget::forget(&connected, &key, consent, out).await
        }
        (Command::Release { yes, .. }, Some(key)) => {
            release::release(&connected, &key, yes, out).await
        }
        (Command::List(args), _) => list::list(&connected, namespace, &args, out).await,
        (Command::Functions, _) => functions::functions(&connected, out).await,
        (Command::Stats { function }, _) => {
            stats::stats(&connected, namespace, function.as_deref(), out).await
        }
        (Command::PurgeExpired { batch }, _) => {
            let prefix = cli.store.prefix.as_deref();
            purge::purge(&connected, prefix, batch, out).await
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
