//! Completing the running call's record inside the caller's own transaction.

use std::time::{Duration, SystemTime};

use idem_core::{
    store::{Outcome, Timestamp},
    Error, StoreError,
};
use serde::Serialize;
use sqlx::PgConnection;

use super::codec;
use super::PostgresStore;

/// Why [`PostgresStore::complete_in_transaction`] was called where it cannot work.
#[derive(Debug)]
pub struct OutsideIdempotentCall;

impl std::fmt::Display for OutsideIdempotentCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "complete_in_transaction is called outside an idempotent call: call it from the \
             body of an `#[idempotent]` function or of `Idempotency::run`",
        )
    }
}

impl std::error::Error for OutsideIdempotentCall {}

impl PostgresStore {
    /// Completes the record of the idempotent call running on this task inside `conn`, the
    /// caller's open transaction, with `value` as its `Ok` outcome, replayed for `ttl`. The
    /// business rows and the completed record then commit, or roll back, together.
    ///
    /// Call it last in the body, just before committing, with the value the body is about to
    /// return and the call's TTL; see the [module docs](super#completing-in-your-transaction)
    /// for what the engine does afterwards.
    ///
    /// The row is found by the call's key, owner token and fencing token
    /// ([`idem_core::context`]), so a caller whose reservation was taken over meanwhile
    /// changes nothing and gets [`Error::LeaseLost`]: roll the transaction back. Other errors: [`Error::Store`] when the
    /// statement fails (the transaction is then unusable anyway), [`Error::Codec`] when `value`
    /// cannot be serialised, [`Error::Rejected`] outside an idempotent call.
    ///
    /// ```no_run
    /// # async fn demo(store: idem_stores::postgres::PostgresStore) -> Result<(), idem_core::Error> {
    /// # let store_err = |e: sqlx::Error| idem_core::Error::Codec(e.into());
    /// let mut tx = store.pool().begin().await.map_err(store_err)?;
    /// sqlx::query("INSERT INTO orders (id) VALUES ($1)")
    ///     .bind("o-1")
    ///     .execute(&mut *tx)
    ///     .await
    ///     .map_err(store_err)?;
    /// let receipt = "order o-1 placed".to_owned();
    /// store
    ///     .complete_in_transaction(&mut tx, &receipt, idem_core::DEFAULT_TTL)
    ///     .await?;
    /// tx.commit().await.map_err(store_err)?;
    /// # Ok(()) }
    /// ```
    pub async fn complete_in_transaction<T: Serialize + ?Sized>(
        &self,
        conn: &mut PgConnection,
        value: &T,
        ttl: Duration,
    ) -> Result<(), Error> {
        let Some(context) = idem_core::context() else {
            return Err(Error::Rejected {
                key: String::new(),
                source: Box::new(OutsideIdempotentCall),
            });
        };
        let key = context.key();
        if let Err(StoreError::Rejected(source)) = self.usable() {
            return Err(Error::Rejected {
                key: key.as_str().to_owned(),
                source,
            });
        }
        let body = serde_json::to_vec(value).map_err(|error| Error::Codec(error.into()))?;
        // Under the key and sealed as the call's handle stores them, when it seals records.
        let stored = context.stored_outcome(Outcome::ok(body));
        let expires_at = Timestamp::from_system_time(SystemTime::now()) + ttl;
        let query = sqlx::query(&self.statements.complete_in_transaction)
            .bind(self.row_key(&context.stored_key()))
            .bind(codec::count(context.fencing_token()))
            .bind(codec::millis(expires_at))
            .bind(stored.body())
            .bind(context.owner().as_str());
        self.count_round_trip();
        let done = query.execute(conn).await.map_err(|error| Error::Store {
            key: key.as_str().to_owned(),
            source: Box::new(self.failed_request("complete in transaction", error)),
        })?;
        match done.rows_affected() {
            0 => Err(Error::LeaseLost {
                key: key.as_str().to_owned(),
            }),
            _ => {
                context.completed_in_transaction();
                Ok(())
            }
        }
    }
}
