//! The child of the crash tests (`idem_tests::crash`): checks out an order on a store, and
//! once its charge step is recorded prints `charged` and waits to be killed.
//!
//! `checkout_child BACKEND ADDRESS SCOPE ORDER EFFECTS_DIR`, where BACKEND is `redis` (ADDRESS a
//! URL, SCOPE the key prefix), `dynamodb` (ADDRESS the endpoint, SCOPE the table) or `postgres`
//! (ADDRESS the database URL, SCOPE unused).

use std::process::ExitCode;
use std::sync::Arc;

use idem_core::store::Store;
use idem_tests::crash::{run_child, Effects};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [backend, address, scope, order, effects] = &args[..] else {
        eprintln!("usage: checkout_child BACKEND ADDRESS SCOPE ORDER EFFECTS_DIR");
        return ExitCode::FAILURE;
    };
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    runtime.block_on(async {
        let store = match connect(backend, address, scope).await {
            Ok(store) => store,
            Err(error) => {
                eprintln!("checkout_child: {error}");
                return ExitCode::FAILURE;
            }
        };
        match run_child(store, order, &Effects::at(effects)).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("checkout_child: the checkout failed: {error}");
                ExitCode::FAILURE
            }
        }
    })
}

async fn connect(backend: &str, address: &str, scope: &str) -> Result<Arc<dyn Store>, String> {
    let _ = (address, scope);
    match backend {
        #[cfg(feature = "redis")]
        "redis" => {
            let client =
                idem_stores::redis::client::Client::open(address).map_err(|e| e.to_string())?;
            let store = idem_stores::redis::RedisStore::builder(client)
                .prefix(scope)
                .connect()
                .await
                .map_err(|e| e.to_string())?;
            Ok(Arc::new(store))
        }
        #[cfg(feature = "dynamodb")]
        "dynamodb" => {
            let client = idem_test_servers::dynamodb::client(
                address,
                idem_test_servers::dynamodb::ClientOptions::default(),
                [],
            );
            Ok(Arc::new(idem_stores::dynamodb::DynamoDbStore::new(
                client, scope,
            )))
        }
        #[cfg(feature = "postgres")]
        "postgres" => {
            let pool = sqlx::PgPool::connect(address)
                .await
                .map_err(|e| e.to_string())?;
            Ok(Arc::new(idem_stores::postgres::PostgresStore::new(pool)))
        }
        other => Err(format!("backend `{other}` is unknown or not built in")),
    }
}
