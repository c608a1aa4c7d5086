//! Test support: the `idem` binary run as a process, records written through a handle, and
//! the scenarios every store runs.
#![allow(dead_code)]

pub mod records;
pub mod scenarios;

use std::process::Command;

use idem_core::Idempotency;

/// The `idem` binary with the options that name one store.
#[derive(Clone, Debug)]
pub struct Cli {
    store_args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Cli {
    /// `idem` with `store_args` (`--store URL --prefix P`...) before every command.
    pub fn new<S: Into<String>>(store_args: impl IntoIterator<Item = S>) -> Self {
        Cli {
            store_args: store_args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        }
    }

    /// The same, with `name=value` in the process's environment.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Runs `idem <store args> <args>` and waits for it.
    pub fn run(&self, args: &[&str]) -> Run {
        let mut all: Vec<&str> = self.store_args.iter().map(String::as_str).collect();
        all.extend_from_slice(args);
        run_with(&all, &self.env)
    }

    /// Runs `idem <store args> <args>` and returns its exit code, its stdout as bytes (which
    /// `--raw` need not write as UTF-8) and its stderr.
    pub fn run_bytes(&self, args: &[&str]) -> (i32, Vec<u8>, String) {
        let mut all: Vec<&str> = self.store_args.iter().map(String::as_str).collect();
        all.extend_from_slice(args);
        let output = command(&all, &self.env)
            .output()
            .expect("the idem binary runs");
        (
            output.status.code().expect("idem exits with a code"),
            output.stdout,
            String::from_utf8(output.stderr).expect("stderr is UTF-8"),
        )
    }
}

/// Runs `idem <args>` with only `env` added to an environment without `IDEM_STORE` or AWS
/// settings. With `IDEM_CLI_SHOW` set, prints the run.
pub fn run_with(args: &[&str], env: &[(String, String)]) -> Run {
    let output = command(args, env).output().expect("the idem binary runs");
    let run = Run {
        args: args.iter().map(|arg| (*arg).to_owned()).collect(),
        code: output.status.code().expect("idem exits with a code"),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    };
    if std::env::var_os("IDEM_CLI_SHOW").is_some() {
        // What an operator would see, for a look at the output: `IDEM_CLI_SHOW=1 cargo test
        // ... -- --nocapture`.
        eprintln!(
            "$ idem {}\n{}{}[exit {}]\n",
            run.args.join(" "),
            run.stdout,
            run.stderr,
            run.code
        );
    }
    run
}

/// The command `idem <args>`, with only `env` added to an environment without `IDEM_STORE`,
/// `IDEM_KEYRING` or AWS settings.
fn command(args: &[&str], env: &[(String, String)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_idem"));
    command.args(args);
    for name in [
        "IDEM_STORE",
        "IDEM_KEYRING",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ] {
        command.env_remove(name);
    }
    // The credential chain reads no file of the machine's, and never asks the instance
    // metadata service (not on loopback); a test names its own files.
    command
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_CONFIG_FILE", "/nonexistent/idem-test/config")
        .env(
            "AWS_SHARED_CREDENTIALS_FILE",
            "/nonexistent/idem-test/credentials",
        );
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

/// What `idem scope` prints for the `Authorization` value `credential`, without its line feed.
pub fn scope_of(credential: &str) -> String {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_idem"))
        .arg("scope")
        .env_remove("IDEM_STORE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the idem binary runs");
    child
        .stdin
        .take()
        .expect("a stdin")
        .write_all(credential.as_bytes())
        .expect("the credential is written");
    let output = child.wait_with_output().expect("idem scope ends");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .trim_end()
        .to_owned()
}

/// What one run of `idem` did.
#[derive(Debug)]
pub struct Run {
    /// The arguments it ran with.
    pub args: Vec<String>,
    /// Its exit code.
    pub code: i32,
    /// What it printed on stdout.
    pub stdout: String,
    /// What it printed on stderr.
    pub stderr: String,
}

impl Run {
    /// Asserts the exit code, showing the whole run otherwise.
    #[track_caller]
    pub fn exits(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            code,
            "exit code of `idem {}`: {self:#?}",
            self.args.join(" ")
        );
        self
    }

    /// stdout, parsed as one JSON document.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("stdout is not JSON ({error}): {self:#?}"))
    }

    /// Asserts that stdout holds `text`.
    #[track_caller]
    pub fn prints(&self, text: &str) -> &Self {
        assert!(
            self.stdout.contains(text),
            "stdout lacks {text:?}: {self:#?}"
        );
        self
    }

    /// Asserts that stderr holds `text`.
    #[track_caller]
    pub fn says(&self, text: &str) -> &Self {
        assert!(
            self.stderr.contains(text),
            "stderr lacks {text:?}: {self:#?}"
        );
        self
    }
}

/// A store under test: a handle on it, one on it whose clock runs two days behind, and the
/// `idem` command that reads it. Holds the server (or table, or database) as long as it lives.
pub struct Subject {
    /// A handle on the store, on the system clock.
    pub idem: Idempotency,
    /// A handle on the same store whose clock is two days behind: what it completes with a
    /// one-day TTL expired a day ago.
    pub past: Idempotency,
    /// `idem` with the options that name the store.
    pub cli: Cli,
    /// The server, table or database, kept alive.
    pub _keep: Box<dyn std::any::Any + Send>,
}

impl Subject {
    /// A subject on `store`, read with `cli`, keeping `keep` alive.
    pub fn new(
        store: std::sync::Arc<dyn idem_core::store::Store>,
        cli: Cli,
        keep: impl std::any::Any + Send,
    ) -> Self {
        Subject {
            idem: Idempotency::from_arc(store.clone()),
            past: Idempotency::from_arc(store).with_clock(records::PastClock),
            cli,
            _keep: Box::new(keep),
        }
    }
}
