//! The table of reserve cases on a PostgreSQL server: the store's reservation is one
//! statement that decides on the server which rows are free (`row_is_free`), so every case,
//! planted through the store and then reserved, checks that statement against the table.

use std::sync::Arc;

use idem_conformance::check_reserve_cases;
use idem_test_servers::postgres::TestPg;

async fn the_reserve_statement_decides_every_reserve_case() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    check_reserve_cases(Arc::clone(&target.store) as Arc<dyn idem_core::store::Store>).await;
}

idem_tests::module_tests! {
    async the_reserve_statement_decides_every_reserve_case,
}
