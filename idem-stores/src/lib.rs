//! Stores for idem: where idempotency records live.
//!
//! Each store is behind a feature of its own, so an application builds only the backend it
//! uses:
//!
//! | feature | store | backend |
//! |---|---|---|
//! | `memory` (default) | [`memory::MemoryStore`] | this process: tests, single-instance services |
//! | `redis` | `redis::RedisStore` | Redis 7+ or Valkey, one server or behind a proxy |
//! | `redis-cluster` | `redis::RedisStore::cluster_builder` | a Redis Cluster |
//! | `dynamodb` | `dynamodb::DynamoDbStore` | Amazon DynamoDB or a compatible server |
//! | `postgres` | `postgres::PostgresStore` | PostgreSQL, through a `sqlx::PgPool` |
//!
//! Every store passes the conformance suite of the `idem-conformance` crate against a real
//! server.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc = include_str!("../docs/performance.md")]
pub mod performance {}

#[cfg(feature = "memory")]
#[cfg_attr(docsrs, doc(cfg(feature = "memory")))]
pub mod memory;

#[cfg(feature = "dynamodb")]
#[cfg_attr(docsrs, doc(cfg(feature = "dynamodb")))]
pub mod dynamodb;

#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub mod postgres;

#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;
