//! The `idem` command, run as a process on the store a test wrote to.

use std::process::Command;

/// `idem` with the options that name one store, and the environment it runs in.
#[derive(Clone, Debug)]
pub struct Idem {
    store_args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Idem {
    /// `idem` with `store_args` (`--store URL --prefix P`...) before every command.
    pub fn new<S: Into<String>>(store_args: impl IntoIterator<Item = S>) -> Self {
        Idem {
            store_args: store_args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        }
    }

    /// `idem --store REDIS_URL --prefix PREFIX`.
    pub fn redis(url: &str, prefix: &str) -> Self {
        Idem::new(["--store", url, "--prefix", prefix])
    }

    /// `idem --store dynamodb://TABLE --region us-east-1 --endpoint ENDPOINT`, with the test
    /// endpoint's static credentials in the environment.
    pub fn dynamodb(table: &str, endpoint: &str) -> Self {
        let url = format!("dynamodb://{table}");
        let mut idem = Idem::new([
            "--store",
            url.as_str(),
            "--region",
            "us-east-1",
            "--endpoint",
            endpoint,
        ]);
        idem.env.push(("AWS_ACCESS_KEY_ID".into(), "test".into()));
        idem.env
            .push(("AWS_SECRET_ACCESS_KEY".into(), "test".into()));
        idem
    }

    /// Runs `idem <store args> <args>` as a process, off the runtime's workers, and waits for
    /// it. The environment has no `IDEM_STORE` or AWS settings but the ones given.
    pub async fn run(&self, args: &[&str]) -> Run {
        let mut all = self.store_args.clone();
        all.extend(args.iter().map(|arg| (*arg).to_owned()));
        let mut command = Command::new(env!("CARGO_BIN_EXE_system-idem"));
        command.args(&all);
        for name in [
            "IDEM_STORE",
            "AWS_REGION",
            "AWS_DEFAULT_REGION",
            "AWS_PROFILE",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
        ] {
            command.env_remove(name);
        }
        for (name, value) in &self.env {
            command.env(name, value);
        }
        let output = tokio::task::spawn_blocking(move || command.output())
            .await
            .unwrap()
            .expect("the idem binary runs");
        Run {
            args: all,
            code: output.status.code().expect("idem exits with a code"),
            stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
        }
    }

    /// `idem <args> --json`, which must exit 0, parsed.
    pub async fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut args = args.to_vec();
        args.push("--json");
        self.run(&args).await.exits(0).json()
    }

    /// `idem list --all --json`: every record of the store.
    pub async fn list(&self) -> Vec<serde_json::Value> {
        match self.json(&["list", "--all"]).await {
            serde_json::Value::Array(records) => records,
            other => panic!("`idem list --json` printed {other}"),
        }
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
    pub fn exits(self, code: i32) -> Self {
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
}
