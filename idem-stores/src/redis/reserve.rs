//! Reserving: one plain `SET ... NX GET`, the record it finds judged here, and the reserve
//! script only for a record that may be taken over or reused.

use std::time::Duration;

use idem_core::store::{judge_reserve, max_record_len, ReserveJudgement};
use idem_core::{
    store::{Claim, InProgress, Record, Reservation, Store, LEASE_GRACE},
    Key, StoreError,
};
use redis::{RedisError, Value};

use super::codec;
use super::connection::Connection;
use super::error::{is_connection_error, refuses_writes, set_refused, store_error};
use super::replies::{self, fenced, Found};
use super::scripts::SCRIPTS;
use super::store::{decimal, time, RedisStore, MAX_EXPIRY_MS};

impl RedisStore {
    /// One `SET key claim NX GET PX expiry`: it reserves a free key, and returns the record of
    /// a taken one, judged here; only a record that may be taken over or reused goes on to the
    /// reserve script.
    pub(super) async fn reserve_claim(
        &self,
        key: &Key,
        claim: &Claim,
    ) -> Result<Reservation, StoreError> {
        let record = claim.record();
        let expiry = (record.lease_until() + LEASE_GRACE)
            .saturating_duration_since(claim.now())
            .as_millis()
            .clamp(1, u128::from(MAX_EXPIRY_MS)) as u64;
        let anchor = claim.now() + Duration::from_millis(expiry);
        let redis_key = self.redis_key(key);
        let value = codec::in_progress(record, anchor);
        let (result, mut conn) = match claim.max_outcome() {
            None => {
                let mut set = redis::cmd("SET");
                set.arg(&redis_key)
                    .arg(value)
                    .arg("NX")
                    .arg("GET")
                    .arg("PX")
                    .arg(expiry);
                self.query_on(&set).await
            }
            // The same `SET`, in a script that first measures a record found, in the same
            // round trip: one over the call's limit is refused before it is read.
            Some(max_outcome) => {
                let mut conn = self.conn.pinned();
                let args: [&[u8]; 3] = [
                    &value,
                    &decimal(expiry),
                    &decimal(max_record_len(max_outcome) as u64),
                ];
                let mut result = self
                    .counter
                    .eval(&mut conn, &SCRIPTS.reserve_within, &redis_key, &args)
                    .await;
                if result.as_ref().is_err_and(is_connection_error) {
                    conn = self.conn.pinned();
                    result = self
                        .counter
                        .eval(&mut conn, &SCRIPTS.reserve_within, &redis_key, &args)
                        .await;
                }
                (result, conn)
            }
        };
        let found = match result {
            Ok(found) => match replies::found_within(found, claim)? {
                Found::Value(found) => found,
                Found::Oversized(Some(unread)) => return Ok(Reservation::Existing(unread)),
                // Expired: the reserve script takes it over, reading it only in the server.
                Found::Oversized(None) => return self.reserve_by_script(key, claim, expiry).await,
            },
            Err(refused) if refuses_writes(&refused) => {
                return self.reserve_without_writes(key, claim, refused).await
            }
            Err(error) => return Err(set_refused(error)),
        };
        let reservation = match found {
            None => Reservation::Reserved(record.clone()),
            Some(value) => match judged(codec::decode(&value)?, claim) {
                Some(Reservation::Reserved(held)) if self.replicas.is_some() => {
                    self.write_again(&mut conn, key, &held).await?;
                    Reservation::Reserved(held)
                }
                Some(answer) => answer,
                None => return self.reserve_by_script(key, claim, expiry).await,
            },
        };
        if !matches!(reservation, Reservation::Existing(_)) {
            self.replicate(&mut conn, key, "reserve").await?;
        }
        Ok(reservation)
    }

    /// [`query`](Self::query) on a pinned connection, returned for the `WAIT` after it; the
    /// server's refusal comes back as it is, for the caller to read.
    async fn query_on(&self, cmd: &redis::Cmd) -> (Result<Value, RedisError>, Connection) {
        let mut conn = self.conn.pinned();
        let mut result = self.counter.query(&mut conn, cmd).await;
        if result.as_ref().is_err_and(is_connection_error) {
            conn = self.conn.pinned();
            result = self.counter.query(&mut conn, cmd).await;
        }
        (result, conn)
    }

    /// Reserves with the reserve script, which judges again from what it reads: for a record
    /// that the plain `SET` found and that may be taken over or reused.
    async fn reserve_by_script(
        &self,
        key: &Key,
        claim: &Claim,
        expiry: u64,
    ) -> Result<Reservation, StoreError> {
        let record = claim.record();
        let (reply, mut conn) = self
            .eval_on(
                &SCRIPTS.reserve,
                key,
                &[
                    &time(claim.now()),
                    record.owner().as_str().as_bytes(),
                    record.fingerprint().to_hex().as_bytes(),
                    &time(record.lease_until()),
                    &decimal(expiry),
                    &time(claim.now() - LEASE_GRACE),
                    &decimal(record.fencing_token()),
                    &claim
                        .max_outcome()
                        .map(|max| decimal(max_record_len(max) as u64))
                        .unwrap_or_default(),
                ],
            )
            .await?;
        let reservation = replies::reservation(reply, claim)?;
        if !matches!(reservation, Reservation::Existing(_)) {
            self.replicate(&mut conn, key, "reserve").await?;
        }
        Ok(reservation)
    }

    /// Answers a reservation whose `SET` the server refused before running it (out of memory,
    /// a failed snapshot, too few replicas: see [`refuses_writes`]) from a plain read, when the
    /// record found needs no write: a replay, a duplicate in progress, the caller's own
    /// reservation (unless replicas must acknowledge it, which a read cannot show).
    async fn reserve_without_writes(
        &self,
        key: &Key,
        claim: &Claim,
        refused: RedisError,
    ) -> Result<Reservation, StoreError> {
        let found = match claim.max_outcome() {
            None => self.get(key).await?,
            Some(max_outcome) => {
                let args: [&[u8]; 1] = [&decimal(max_record_len(max_outcome) as u64)];
                let mut conn = self.conn.pinned();
                let read = self
                    .counter
                    .eval(&mut conn, &SCRIPTS.read_within, &self.redis_key(key), &args)
                    .await
                    .map_err(|error| store_error(error, "read_within"))?;
                match replies::found_within(read, claim)? {
                    Found::Value(found) => found.map(|value| codec::decode(&value)).transpose()?,
                    Found::Oversized(Some(unread)) => return Ok(Reservation::Existing(unread)),
                    // Expired: taking it needs a write, which the server refuses.
                    Found::Oversized(None) => None,
                }
            }
        };
        match found.and_then(|found| judged(found, claim)) {
            Some(Reservation::Reserved(_)) if self.replicas.is_some() => {}
            Some(answer) => return Ok(answer),
            None => {}
        }
        Err(store_error(refused, "reserve"))
    }

    /// Writes the caller's own reservation, found by its `SET` sent again, once more on `conn`
    /// (a renewal to the same lease, owner-checked), so that the `WAIT` after it covers it: the
    /// first `SET` may have landed on another connection, or before a failover.
    async fn write_again(
        &self,
        conn: &mut Connection,
        key: &Key,
        held: &InProgress,
    ) -> Result<(), StoreError> {
        let reply = self
            .counter
            .eval(
                conn,
                &SCRIPTS.renew,
                &self.redis_key(key),
                &[
                    held.owner().as_str().as_bytes(),
                    &time(held.lease_until()),
                    &decimal(idem_core::store::LEASE_GRACE_MS),
                ],
            )
            .await
            .map_err(|error| store_error(error, "renew"))
            .and_then(replies::reply)?;
        fenced(reply, "renew")
    }
}

/// What reserving `claim` answers when the key holds `found`, if it needs no write: the
/// caller's own reservation sent again, or a record that stands. `None` when the record may be
/// taken over or reused: the reserve script judges again and writes. The judgement is
/// idem-core's [`judge_reserve`]; the script's copy of it (`lua/reserve.lua`) stays on the
/// server, where it is atomic with the write.
fn judged(found: Record, claim: &Claim) -> Option<Reservation> {
    let judgement = judge_reserve(Some(found), claim);
    match judgement {
        ReserveJudgement::Held(_) | ReserveJudgement::Existing(_) => {
            Some(judgement.into_reservation(claim))
        }
        ReserveJudgement::Vacant | ReserveJudgement::Expired(_) | ReserveJudgement::TakeOver(_) => {
            None
        }
    }
}
