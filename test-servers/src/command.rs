//! The `idem` command run as a process by a test: the program (each package names its own
//! build of it), the options that name one store, and an environment cleaned of the machine's
//! store, keyring and AWS settings, so that a test sees only what it sets.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The variables a run never inherits: the store and keyring `idem` would otherwise read, and
/// every AWS setting the SDK's region and credential chains look at.
const CLEANED: [&str; 12] = [
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
];

/// An `idem` program with the options that name one store, and what its environment adds.
#[derive(Clone, Debug)]
pub struct Idem {
    program: PathBuf,
    store_args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Idem {
    /// `program` (a package's `env!("CARGO_BIN_EXE_...")`) with no store options.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Idem {
            program: program.into(),
            store_args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// The same, with `store_args` (`--store URL --prefix P`...) before every command.
    pub fn store<S: Into<String>>(mut self, store_args: impl IntoIterator<Item = S>) -> Self {
        self.store_args
            .extend(store_args.into_iter().map(Into::into));
        self
    }

    /// `--store REDIS_URL --prefix PREFIX`.
    pub fn redis(self, url: &str, prefix: &str) -> Self {
        self.store(["--store", url, "--prefix", prefix])
    }

    /// `--store dynamodb://TABLE --region us-east-1 --endpoint ENDPOINT`, with the test
    /// endpoint's static credentials in the environment.
    pub fn dynamodb(self, table: &str, endpoint: &str) -> Self {
        let url = format!("dynamodb://{table}");
        self.store([
            "--store",
            url.as_str(),
            "--region",
            "us-east-1",
            "--endpoint",
            endpoint,
        ])
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
    }

    /// The same, with `name=value` in the process's environment.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Runs `idem <store args> <args>` and waits for it. With `IDEM_CLI_SHOW` set, prints the
    /// run as an operator would see it.
    pub fn run(&self, args: &[&str]) -> Run {
        let output = self.output(args);
        let run = Run {
            args: self.all_args(args),
            code: output.status.code().expect("idem exits with a code"),
            stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
        };
        if std::env::var_os("IDEM_CLI_SHOW").is_some() {
            // For a look at the output: `IDEM_CLI_SHOW=1 cargo test ... -- --nocapture`.
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

    /// Runs `idem <store args> <args>` and returns its exit code, its stdout as bytes (which
    /// `--raw` need not write as UTF-8) and its stderr.
    pub fn run_bytes(&self, args: &[&str]) -> (i32, Vec<u8>, String) {
        let output = self.output(args);
        (
            output.status.code().expect("idem exits with a code"),
            output.stdout,
            String::from_utf8(output.stderr).expect("stderr is UTF-8"),
        )
    }

    /// Runs `idem <store args> <args>` with `stdin` on its standard input, and returns what it
    /// did as it came: status, stdout and stderr as bytes.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the idem binary runs");
        child
            .stdin
            .take()
            .expect("a stdin")
            .write_all(stdin)
            .expect("the input is written");
        child.wait_with_output().expect("idem ends")
    }

    /// The command `idem <store args> <args>`, in the cleaned environment with only this
    /// runner's variables added.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.store_args).args(args);
        for name in CLEANED {
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
        command.envs(self.env.iter().map(|(name, value)| (name, value)));
        command
    }

    fn output(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("the idem binary runs")
    }

    fn all_args(&self, args: &[&str]) -> Vec<String> {
        let extra = args.iter().map(|arg| (*arg).to_owned());
        self.store_args.iter().cloned().chain(extra).collect()
    }
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

    /// Everything it printed, stdout then stderr.
    pub fn printed(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
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
