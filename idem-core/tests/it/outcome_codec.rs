//! A call run with an outcome codec of its own: its value is stored as the codec writes it,
//! a replay hands the codec the stored bytes themselves, and the codec's failures are told as
//! JSON's are.

use bytes::Bytes;
use idem_conformance::ReferenceStore;
use idem_core::{
    store::{Outcome, Record},
    BoxError, Call, Error, Fingerprint, Idempotency, Key, OutcomeCodec, ReleaseErrors,
};

/// Stores a value's bytes as they are; refuses to encode an empty value, and to decode an
/// outcome that starts with `!`.
struct Raw;

impl OutcomeCodec<Bytes> for Raw {
    fn encode(&self, value: &Bytes) -> Result<Bytes, BoxError> {
        if value.is_empty() {
            return Err("nothing to store".into());
        }
        Ok(value.clone())
    }

    fn decode(&self, outcome: Bytes) -> Result<Bytes, BoxError> {
        if outcome.starts_with(b"!") {
            return Err("not a raw outcome".into());
        }
        Ok(outcome)
    }
}

fn call(idem: &Idempotency, id: &str) -> Call {
    Call::new(key(idem, id), Fingerprint::of(id).unwrap())
}

fn key(idem: &Idempotency, id: &str) -> Key {
    idem.key("receipts.render").part(id).finish().unwrap()
}

/// The outcome stored under the key of the call for `id`.
async fn stored_outcome(idem: &Idempotency, id: &str) -> Outcome {
    let inspected = idem
        .inspect(&key(idem, id))
        .await
        .unwrap()
        .expect("a record");
    let Record::Completed(completed) = inspected.record() else {
        panic!("a completed record, not {:?}", inspected.record());
    };
    completed.outcome().clone()
}

#[tokio::test]
async fn the_value_is_stored_as_the_codec_writes_it_and_replayed_from_the_stored_bytes() {
    let idem = Idempotency::new(ReferenceStore::new());
    let call = call(&idem, "r-1");
    let receipt = Bytes::from_static(b"\0\xffreceipt");
    let first = idem
        .run_with_codec(call.clone(), &ReleaseErrors, &Raw, async {
            Ok::<_, Error>(receipt.clone())
        })
        .await
        .unwrap();
    assert!(!first.replayed);
    let stored = stored_outcome(&idem, "r-1").await;
    assert_eq!(stored, Outcome::ok(receipt.clone()), "no JSON around it");

    let replayed = idem
        .run_with_codec(call.clone(), &ReleaseErrors, &Raw, async {
            Ok::<_, Error>(Bytes::from_static(b"run again"))
        })
        .await
        .unwrap();
    assert!(replayed.replayed);
    assert_eq!(replayed.value, receipt);
    assert_eq!(
        replayed.value.as_ptr(),
        stored_outcome(&idem, "r-1").await.body().as_ptr(),
        "the replay's value is the stored bytes, shared rather than copied"
    );
}

#[tokio::test]
async fn an_outcome_the_codec_cannot_decode_fails_as_a_codec_error() {
    let idem = Idempotency::new(ReferenceStore::new());
    let call = call(&idem, "r-2");
    idem.run_with_codec(call.clone(), &ReleaseErrors, &Raw, async {
        Ok::<_, Error>(Bytes::from_static(b"!marked"))
    })
    .await
    .unwrap();
    let error = idem
        .run_with_codec(call, &ReleaseErrors, &Raw, async {
            Ok::<_, Error>(Bytes::from_static(b"run again"))
        })
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Codec(_)), "{error:?}");
    assert_eq!(error.to_string(), "idempotency codec failed");
    let source = std::error::Error::source(&error).expect("the codec's error");
    assert_eq!(source.to_string(), "not a raw outcome");
}

#[tokio::test]
async fn a_value_the_codec_cannot_encode_leaves_no_outcome_as_json_does() {
    let idem = Idempotency::new(ReferenceStore::new());
    let call = call(&idem, "r-3");
    let error = idem
        .run_with_codec(call.clone(), &ReleaseErrors, &Raw, async {
            Ok::<_, Error>(Bytes::new())
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::NotRecorded { cause, .. } if matches!(**cause, Error::Codec(_))),
        "{error:?}"
    );
    assert_eq!(stored_outcome(&idem, "r-3").await, Outcome::Aborted);
    let retried = idem
        .run_with_codec(call, &ReleaseErrors, &Raw, async {
            Ok::<_, Error>(Bytes::from_static(b"run again"))
        })
        .await
        .unwrap_err();
    assert!(matches!(retried, Error::Aborted { .. }), "{retried:?}");
}

#[tokio::test]
async fn a_value_that_starts_as_a_sealed_one_is_refused_as_it_is_encoded() {
    // Stored, it would be refused by every replay as sealed: refused now instead.
    let idem = Idempotency::new(ReferenceStore::new());
    let call = call(&idem, "r-sealed");
    let error = idem
        .run_with_codec(call, &ReleaseErrors, &Raw, async {
            Ok::<_, Error>(Bytes::from_static(b"\0iS\x02not sealed"))
        })
        .await
        .unwrap_err();
    let Error::NotRecorded { cause, .. } = &error else {
        panic!("not recorded, not {error:?}");
    };
    let Error::Codec(source) = &**cause else {
        panic!("a codec error, not {cause:?}");
    };
    assert!(source.to_string().contains("sealed value"), "{source}");
    assert_eq!(stored_outcome(&idem, "r-sealed").await, Outcome::Aborted);
}

#[tokio::test]
async fn a_json_outcome_decodes_through_the_default_codec_as_run_stores_it() {
    let idem = Idempotency::new(ReferenceStore::new());
    let call = call(&idem, "r-4");
    idem.run(call.clone(), async { Ok::<_, Error>(vec![1u8, 2]) })
        .await
        .unwrap();
    assert_eq!(
        stored_outcome(&idem, "r-4").await,
        Outcome::ok(&b"[1,2]"[..])
    );
    let replayed = idem
        .run_with_codec(call, &ReleaseErrors, &idem_core::JsonCodec, async {
            Ok::<_, Error>(Vec::<u8>::new())
        })
        .await
        .unwrap();
    assert!(replayed.replayed);
    assert_eq!(replayed.value, [1, 2]);
}
