//! Test support shared by the integration tests.
