//! The `idem` command, run as a process on the store a test wrote to: idem-test-servers'
//! runner on this package's `system-idem` binary, run off the runtime's workers.

use idem_test_servers::command::Run;

/// `system-idem` with the options that name one store, and the environment it runs in.
#[derive(Clone, Debug)]
pub struct Idem(idem_test_servers::command::Idem);

impl Idem {
    /// `idem --store REDIS_URL --prefix PREFIX`.
    pub fn redis(url: &str, prefix: &str) -> Self {
        Idem(program().redis(url, prefix))
    }

    /// `idem --store dynamodb://TABLE --region us-east-1 --endpoint ENDPOINT`, with the test
    /// endpoint's static credentials in the environment.
    pub fn dynamodb(table: &str, endpoint: &str) -> Self {
        Idem(program().dynamodb(table, endpoint))
    }

    /// Runs `idem <store args> <args>` as a process, off the runtime's workers, and waits for
    /// it.
    pub async fn run(&self, args: &[&str]) -> Run {
        let idem = self.0.clone();
        let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
        tokio::task::spawn_blocking(move || {
            idem.run(&args.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .await
        .unwrap()
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

/// This package's build of `idem`.
fn program() -> idem_test_servers::command::Idem {
    idem_test_servers::command::Idem::new(env!("CARGO_BIN_EXE_system-idem"))
}
