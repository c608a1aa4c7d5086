"""Sequential first calls and replays through Powertools for AWS Lambda's idempotency utility
on Redis, printed as markdown table rows like tests/benches/redis_sequential.rs.

Run by scripts/compare-powertools.sh: python powertools_idempotency.py HOST PORT CALLS
"""

import os
import sys
import time

import redis
from aws_lambda_powertools.utilities.idempotency import (
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.persistence.redis import (
    RedisCachePersistenceLayer,
)

host, port, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
client = redis.Redis(host=host, port=port)
persistence = RedisCachePersistenceLayer(client=client)
# No local cache, so every call goes to Redis as idem's do.
config = IdempotencyConfig(expires_after_seconds=24 * 3600, use_local_cache=False)


@idempotent_function(data_keyword_argument="order", persistence_store=persistence, config=config)
def create(order: dict) -> dict:
    return {"id": order["id"], "amount": 1000}


def commands() -> int:
    stats = client.info("commandstats")
    return sum(v["calls"] for k, v in stats.items() if k != "cmdstat_info")


def measure(op):
    for n in range(calls // 10):
        op(n)
    before = commands()
    times = []
    for n in range(calls // 10, calls // 10 + calls):
        started = time.perf_counter()
        op(n)
        times.append(time.perf_counter() - started)
    after = commands()
    times.sort()
    return times, (after - before) / calls


def percentile(sorted_times, p):
    return sorted_times[round((len(sorted_times) - 1) * p)]


def fmt(seconds):
    return f"{seconds * 1e6:.1f}µs" if seconds < 1e-3 else f"{seconds * 1e3:.1f}ms"


run = os.getpid()
first, first_commands = measure(lambda n: create(order={"id": f"order-{run}-{n}", "amount": 1000}))
hot = {"id": f"order-{run}-hot", "amount": 1000}
create(order=hot)
replay, replay_commands = measure(lambda n: create(order=hot))
for what, times, per_call in (("first call", first, first_commands), ("replay", replay, replay_commands)):
    # Powertools sends plain commands, one round trip each.
    print(
        f"| Powertools | {what} | {fmt(percentile(times, 0.5))} | {fmt(percentile(times, 0.99))}"
        f" | {per_call:.2f} | {per_call:.2f} |"
    )
