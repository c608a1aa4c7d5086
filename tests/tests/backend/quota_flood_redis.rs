//! A client over its quota on Redis: each of its requests costs one small read before the
//! reservation, never a read of the record. A used key with a 1 MiB record is read once per
//! replay (as without a quota), and a new key is refused after an `EXISTS` alone. Counted by
//! the server: the commands clients sent (`MONITOR`) and the bytes it wrote
//! (`total_net_output_bytes`).

use idem_core::{Call, Error, Fingerprint, Idempotency, Key, ScopeQuota};
use idem_stores::redis::client as redis;
use idem_test_servers::redis::server::TestRedis;
use idem_test_servers::redis::target::RedisTarget;

const RECORD: usize = 1 << 20;
const REPLAYS: u64 = 4;

fn key(idem: &Idempotency, order: &str) -> Key {
    idem.key("orders.create")
        .scope(Some("client-a"))
        .part(order)
        .finish()
        .unwrap()
}

async fn create(idem: &Idempotency, order: &str) -> Result<(usize, bool), Error> {
    let call = Call::new(key(idem, order), Fingerprint::of(order).unwrap());
    let done = idem
        .run(call, async { Ok::<_, Error>("x".repeat(RECORD)) })
        .await?;
    Ok((done.value.len(), done.replayed))
}

/// What the server has written to its clients so far, in bytes.
async fn bytes_sent(target: &RedisTarget) -> u64 {
    let mut raw = target.raw().await;
    let info: String = redis::cmd("INFO")
        .arg("stats")
        .query_async(&mut raw)
        .await
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("total_net_output_bytes:"))
        .expect("INFO stats names total_net_output_bytes")
        .trim()
        .parse()
        .unwrap()
}

async fn an_over_quota_client_costs_one_small_read_per_request() {
    let Some(redis) = TestRedis::start_owned() else {
        return;
    };
    let target = RedisTarget::on(redis).await;
    let idem =
        Idempotency::new(target.redis_store().clone()).with_quota(ScopeQuota::new().max_records(1));
    assert_eq!(create(&idem, "o-1").await.unwrap(), (RECORD, false));

    let (replayed, sent) = target.client_commands(create(&idem, "o-1")).await;
    assert_eq!(replayed.unwrap(), (RECORD, true));
    assert_eq!(
        sent,
        ["EXISTS", "SET"],
        "over its quota, a used key is asked about by its key alone, then reserved"
    );
    let (refused, sent) = target.client_commands(create(&idem, "o-2")).await;
    assert!(
        matches!(refused, Err(Error::QuotaExceeded { .. })),
        "{refused:?}"
    );
    assert_eq!(sent, ["EXISTS"], "a new key over the quota: one small read");

    let before = bytes_sent(&target).await;
    for _ in 0..REPLAYS {
        assert_eq!(create(&idem, "o-1").await.unwrap(), (RECORD, true));
    }
    let per_replay = (bytes_sent(&target).await - before) / REPLAYS;
    assert!(
        per_replay < (RECORD + RECORD / 4) as u64,
        "each replay over the quota read {per_replay} bytes: the 1 MiB record more than once"
    );

    let before = bytes_sent(&target).await;
    for _ in 0..REPLAYS {
        assert!(create(&idem, "o-3").await.is_err());
    }
    let per_refusal = (bytes_sent(&target).await - before) / REPLAYS;
    assert!(
        per_refusal < 8 << 10,
        "each refusal cost {per_refusal} bytes"
    );
}

idem_tests::module_tests! {
    async an_over_quota_client_costs_one_small_read_per_request,
}
