//! The size-before-read tests, one binary: a record far over a call's longest outcome is
//! refused before the store copies it out, in every store. A binary of its own because its
//! allocator counts (`plant_and_measure`): what a refused replay allocates is measured for the
//! whole process, so each measuring test runs alone.

mod plant_and_measure;

idem_tests::binary_main! {
    #[cfg(feature = "dynamodb")] size_before_read_dynamodb,
    size_before_read_memory,
    #[cfg(feature = "postgres")] size_before_read_postgres,
    #[cfg(all(feature = "redis", feature = "seal"))] size_before_read_redis,
}
