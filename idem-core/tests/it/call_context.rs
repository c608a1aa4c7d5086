//! What a running body sees of its call through `idem_core::context()`.

use idem_conformance::ReferenceStore;
use idem_core::{context, step, Call, Error, Fingerprint, Idempotency};

#[tokio::test]
async fn a_body_sees_its_key_attempt_and_a_live_lease() {
    let idem = Idempotency::new(ReferenceStore::new());
    assert!(context().is_none(), "no context outside a body");
    let key = idem.key("orders.create").part("o1").finish().unwrap();
    let call = Call::new(key.clone(), Fingerprint::of("o1").unwrap());
    let seen = idem
        .run(call, async {
            let ctx = context().expect("inside an idempotent body");
            step("charge", async { Ok::<_, Error>(1) }).await?;
            Ok::<_, Error>((
                ctx.key().as_str().to_owned(),
                ctx.attempt(),
                ctx.is_lease_lost(),
                format!("{ctx:?}"),
            ))
        })
        .await
        .unwrap()
        .value;
    let (seen_key, attempt, lost, shown) = seen;
    assert_eq!((seen_key.as_str(), attempt, lost), (key.as_str(), 1, false));
    for part in ["Journal", "orders.create", "recorded: 1", "used: 1"] {
        assert!(shown.contains(part), "{part} in {shown}");
    }
}
