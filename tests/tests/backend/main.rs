//! The backend suite, one binary: a module per topic, each the tests of one store, server or
//! whole path on the servers it starts (Redis, PostgreSQL, moto_server...), run by
//! libtest-mimic so that a test whose server cannot be had is reported as ignored. A module
//! is built with the features its store needs; `system` holds what the system tests share.
//! Run one module with its name as a filter (`-- redis_steps`), one test with
//! `--exact redis_steps::steps_stay_for_the_same_call_only`.

#[cfg(feature = "system")]
mod system;

idem_tests::binary_main! {
    #[cfg(feature = "dynamodb")] dynamodb_conformance,
    #[cfg(feature = "dynamodb")] dynamodb_conformance_sort_key,
    #[cfg(feature = "dynamodb")] dynamodb_crash,
    #[cfg(feature = "dynamodb")] dynamodb_faults,
    #[cfg(feature = "dynamodb")] dynamodb_inventory,
    #[cfg(feature = "dynamodb")] dynamodb_misconfigured,
    #[cfg(feature = "dynamodb")] dynamodb_requests,
    #[cfg(feature = "dynamodb")] dynamodb_single_table,
    #[cfg(feature = "dynamodb")] dynamodb_steps,
    #[cfg(feature = "dynamodb")] dynamodb_store,
    #[cfg(feature = "dynamodb")] dynamodb_store_limits,
    #[cfg(all(feature = "redis", feature = "postgres", feature = "dynamodb"))] forget_unchanged,
    #[cfg(all(feature = "http", feature = "redis"))] http_redis,
    #[cfg(feature = "postgres")] postgres_concurrency,
    #[cfg(feature = "postgres")] postgres_conformance,
    #[cfg(feature = "postgres")] postgres_corrupt,
    #[cfg(feature = "postgres")] postgres_crash,
    #[cfg(feature = "postgres")] postgres_faults,
    #[cfg(feature = "postgres")] postgres_inventory,
    #[cfg(feature = "postgres")] postgres_round_trips,
    #[cfg(feature = "postgres")] postgres_steps,
    #[cfg(feature = "postgres")] postgres_store,
    #[cfg(feature = "postgres")] postgres_transaction,
    #[cfg(feature = "redis")] quota_flood_redis,
    #[cfg(feature = "redis")] redis_cluster,
    #[cfg(feature = "redis")] redis_cluster_conformance,
    #[cfg(feature = "redis")] redis_concurrency,
    #[cfg(feature = "redis")] redis_conformance,
    #[cfg(all(feature = "redis", feature = "seal"))] redis_conformance_sealed,
    #[cfg(feature = "redis")] redis_corrupt,
    #[cfg(feature = "redis")] redis_corrupt_steps,
    #[cfg(feature = "redis")] redis_crash,
    #[cfg(feature = "redis")] redis_expiry,
    #[cfg(feature = "redis")] redis_faults,
    #[cfg(feature = "redis")] redis_harness,
    #[cfg(feature = "redis")] redis_inventory,
    #[cfg(feature = "redis")] redis_reserve,
    #[cfg(feature = "redis")] redis_round_trips,
    #[cfg(feature = "redis")] redis_steps,
    #[cfg(feature = "redis")] redis_waiting,
    #[cfg(feature = "dynamodb")] reserve_table_dynamodb,
    #[cfg(feature = "postgres")] reserve_table_postgres,
    #[cfg(feature = "redis")] reserve_table_redis,
    #[cfg(all(feature = "redis", feature = "postgres", feature = "seal"))] sealed_store_scope,
    #[cfg(feature = "system")] system_client_redis,
    #[cfg(feature = "system")] system_downstream,
    #[cfg(feature = "system")] system_lambda_dynamodb,
    #[cfg(feature = "system")] system_sealed,
    #[cfg(feature = "system")] system_two_doors,
}
