//! The table of reserve cases on a Redis server: through the store (a plain `SET ... NX GET`,
//! idem-core's judgement, and the reserve script for a record it may reuse or take over), and
//! through the reserve script alone, which keeps its own copy of the judgement so that it
//! decides and writes atomically: every case, sent straight to the script, must decide as the
//! table says.

use std::sync::Arc;

use idem_conformance::{check_reserve_cases, reserve_cases, ReserveCase};
use idem_core::store::ReserveJudgement;
use idem_core::{
    store::{OwnerToken, Store, LEASE_GRACE},
    Idempotency, Key,
};
use idem_stores::redis::client::{self as redis, Value};
use idem_test_servers::redis::target::RedisTarget;

/// The reserve script as the store sends it: the shared helpers, then its body.
const RESERVE_SCRIPT: &str = concat!(
    include_str!("../../../idem-stores/src/redis/lua/common.lua"),
    include_str!("../../../idem-stores/src/redis/lua/reserve.lua"),
);

/// The key of `case`, in a namespace of this run's own.
fn key_of(handle: &Idempotency, case: &ReserveCase) -> Key {
    handle.key(case.name()).finish().unwrap()
}

/// The word the script replies with for what the case expects.
fn expected_reply(case: &ReserveCase) -> &'static str {
    match case.expected() {
        ReserveJudgement::Vacant | ReserveJudgement::Expired(_) => "reserved",
        ReserveJudgement::Held(_) => "held",
        ReserveJudgement::TakeOver(_) => "took_over",
        ReserveJudgement::Existing(_) => "existing",
    }
}

/// Sends `case`'s claim to the reserve script, with the arguments its header documents, and
/// returns the first word of the reply.
async fn reserve_by_script(target: &RedisTarget, key: &Key, case: &ReserveCase) -> String {
    let claim = case.claim();
    let record = claim.record();
    let expiry = (record.lease_until() + LEASE_GRACE)
        .saturating_duration_since(claim.now())
        .as_millis()
        .max(1);
    let mut conn = target.raw().await;
    let reply: Value = redis::cmd("EVAL")
        .arg(RESERVE_SCRIPT)
        .arg(1)
        .arg(target.redis_store().redis_key(key))
        .arg(claim.now().as_millis())
        .arg(record.owner().as_str())
        .arg(record.fingerprint().to_hex())
        .arg(record.lease_until().as_millis())
        .arg(expiry.to_string())
        .arg((claim.now() - LEASE_GRACE).as_millis())
        .arg(record.fencing_token())
        .query_async(&mut conn)
        .await
        .unwrap_or_else(|error| panic!("case `{}`: EVAL failed: {error}", case.name()));
    match reply {
        Value::Array(items) => match items.first() {
            Some(Value::BulkString(word)) => String::from_utf8_lossy(word).into_owned(),
            other => panic!("case `{}`: reply starts with {other:?}", case.name()),
        },
        other => panic!("case `{}`: reply {other:?}", case.name()),
    }
}

async fn the_store_decides_every_reserve_case() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    check_reserve_cases(Arc::new(target.redis_store().clone())).await;
}

async fn the_reserve_script_decides_every_reserve_case() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let store = target.redis_store();
    let handle = Idempotency::new(store.clone()).with_namespace(format!(
        "reserve-script-{}",
        OwnerToken::generate().as_str()
    ));
    for case in reserve_cases() {
        let key = key_of(&handle, &case);
        case.plant(store, &key).await;
        let reply = reserve_by_script(&target, &key, &case).await;
        assert_eq!(reply, expected_reply(&case), "case `{}`", case.name());
        assert_eq!(
            store.get(&key).await.unwrap(),
            case.expected_record(),
            "case `{}`: the record kept",
            case.name()
        );
    }
}

idem_tests::module_tests! {
    async the_store_decides_every_reserve_case,
    async the_reserve_script_decides_every_reserve_case,
}
