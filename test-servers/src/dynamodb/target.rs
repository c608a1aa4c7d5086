//! A DynamoDB store on a fresh table, for behaviour and conformance tests.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use idem_conformance::Target;
use idem_core::{store::Store, Key};
use idem_stores::dynamodb::{DynamoDbStore, DynamoDbStoreBuilder, SortKey};

use super::{client, ClientOptions, FaultInjector, RequestLog};
use crate::dynamodb::server::TestMoto;
use crate::unique::unique_name;

/// A DynamoDB store on a table of its own, with the client's requests logged and faults
/// injectable. Owns its server when it started one: dropping it stops the server.
#[derive(Debug)]
pub struct TestDynamo {
    /// The server or endpoint.
    pub moto: TestMoto,
    /// The client the store uses.
    pub client: Client,
    /// The store, on a fresh table.
    pub store: Arc<DynamoDbStore>,
    /// Every request the client sent.
    pub requests: RequestLog,
    /// Faults to inject into the client's responses.
    pub faults: FaultInjector,
}

impl TestDynamo {
    /// A store on a fresh table of the test endpoint (see [`TestMoto::start`]), its client
    /// without retries. `None` when no server can be had (the test is then ignored).
    pub async fn start() -> Option<TestDynamo> {
        Self::on(TestMoto::start()?, ClientOptions::default()).await
    }

    /// Like [`start`](TestDynamo::start), on a server this test owns and may kill.
    pub async fn start_owned() -> Option<TestDynamo> {
        Self::on(TestMoto::start_owned()?, ClientOptions::default()).await
    }

    /// Like [`start`](TestDynamo::start), on a table whose primary key has `sort_key` too,
    /// as a single-table design has.
    pub async fn with_sort_key(sort_key: SortKey) -> Option<TestDynamo> {
        Self::built(TestMoto::start()?, ClientOptions::default(), |builder| {
            builder.sort_key(sort_key)
        })
        .await
    }

    /// A store on a fresh table of `moto`, with a client built with `options`.
    pub async fn on(moto: TestMoto, options: ClientOptions) -> Option<TestDynamo> {
        Self::built(moto, options, |builder| builder).await
    }

    /// A store on a fresh table of `moto`, with a client built with `options`, built by
    /// `configure`.
    pub async fn built(
        moto: TestMoto,
        options: ClientOptions,
        configure: impl FnOnce(DynamoDbStoreBuilder) -> DynamoDbStoreBuilder,
    ) -> Option<TestDynamo> {
        let requests = RequestLog::new();
        let faults = FaultInjector::new();
        let client = client(
            moto.endpoint(),
            options,
            [requests.interceptor(), faults.interceptor()],
        );
        let store = configure(DynamoDbStore::builder(client.clone(), unique_table_name())).build();
        store
            .create_table()
            .await
            .unwrap_or_else(|error| panic!("creating table `{}`: {error}", store.table()));
        Some(TestDynamo {
            moto,
            client,
            store: Arc::new(store),
            requests,
            faults,
        })
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        self.store.table()
    }

    /// Writes `item` as it is under the primary key of `key`, bypassing the store.
    pub async fn put_raw(&self, key: &Key, mut item: HashMap<String, AttributeValue>) {
        item.extend(self.store.primary_key(key).expect("a key DynamoDB takes"));
        self.client
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .send()
            .await
            .expect("a raw put succeeds");
    }

    /// Reads the item under `key` as it is, bypassing the store.
    pub async fn get_raw(&self, key: &Key) -> Option<HashMap<String, AttributeValue>> {
        self.client
            .get_item()
            .table_name(self.table())
            .set_key(Some(
                self.store.primary_key(key).expect("a key DynamoDB takes"),
            ))
            .consistent_read(true)
            .send()
            .await
            .expect("a raw get succeeds")
            .item
    }
}

#[async_trait]
impl Target for TestDynamo {
    fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// An item with a state that is neither `in_progress` nor `completed` and no fingerprint.
    async fn corrupt(&self, key: &Key) -> bool {
        let names = self.store.names();
        self.put_raw(
            key,
            HashMap::from([
                (names.state.clone(), AttributeValue::S("garbage".into())),
                (names.live_until.clone(), AttributeValue::S("soon".into())),
            ]),
        )
        .await;
        true
    }
}

/// A table name no other test uses, even on a shared endpoint.
pub fn unique_table_name() -> String {
    unique_name('-')
}
