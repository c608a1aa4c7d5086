//! Errors: which failures release the key, which are stored, and bad records.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::{call, charge, Charge, Context};
use idem_core::{store::Store, Answered, Error};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(error_releases_the_key),
    check!(stored_error_is_replayed),
    check!(undecodable_result_is_a_codec_error),
    check!(corrupt_record_is_an_error_not_a_panic),
    check!(unserialisable_outcome_is_told_and_never_run_again),
];

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
enum PayError {
    Declined,
    Idem(String),
}

impl From<Error> for PayError {
    fn from(error: Error) -> Self {
        PayError::Idem(error.to_string())
    }
}

/// Semantic 5: an `Err` releases the key; the corrected retry runs.
async fn error_releases_the_key(ctx: Context) {
    let idem = ctx.handle();
    let runs = AtomicUsize::new(0);
    let declined: Result<Answered<String>, PayError> = idem
        .run(call(&ctx, "o-8", 1), async {
            runs.fetch_add(1, Ordering::SeqCst);
            Err(PayError::Declined)
        })
        .await;
    assert_eq!(declined, Err(PayError::Declined));
    assert_eq!(
        ctx.store().get(call(&ctx, "o-8", 1).key()).await.unwrap(),
        None,
        "an Err must release the key"
    );
    let retried: Result<Answered<String>, PayError> = idem
        .run(call(&ctx, "o-8", 1), async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok("ok".to_string())
        })
        .await;
    assert_eq!(
        retried,
        Ok(Answered {
            value: "ok".into(),
            replayed: false
        })
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// Semantic 5 with a `store_err` policy: a final error is stored and replayed.
async fn stored_error_is_replayed(ctx: Context) {
    let idem = ctx.handle();
    let runs = AtomicUsize::new(0);
    for _ in 0..3 {
        let result: Result<Answered<String>, PayError> = idem
            .run_storing_errors(call(&ctx, "o-9", 1), |e| *e == PayError::Declined, async {
                runs.fetch_add(1, Ordering::SeqCst);
                Err(PayError::Declined)
            })
            .await;
        assert_eq!(result, Err(PayError::Declined));
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "a stored error must be replayed, not re-run"
    );
}

/// A stored result that no longer decodes as the function's type is a codec error.
///
/// The store only has to hand back the bytes it was given, which every other check needs too;
/// the decoding is the engine's.
async fn undecodable_result_is_a_codec_error(ctx: Context) {
    let idem = ctx.handle();
    let stored: Answered<String> = idem
        .run(call(&ctx, "o-16", 1), async {
            Ok::<_, Error>("not a number".to_string())
        })
        .await
        .unwrap();
    assert!(!stored.replayed);
    let err = idem
        .run(call(&ctx, "o-16", 1), async { Ok::<u64, Error>(1) })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Codec(_)), "got {err:?}");
}

/// A record the store can't decode yields `CorruptRecord`, never a panic, and never runs the
/// function.
async fn corrupt_record_is_an_error_not_a_panic(ctx: Context) {
    let key_call = call(&ctx, "o-17", 1);
    if !ctx.target().corrupt(key_call.key()).await {
        eprintln!("conformance: this store cannot hold a malformed record; check passes vacuously");
        return;
    }
    let idem = ctx.handle();
    let side_effect = Charge::instant();
    let err = charge(&idem, key_call, 1, &side_effect).await.unwrap_err();
    assert!(matches!(err, Error::CorruptRecord { .. }), "got {err:?}");
    assert_eq!(side_effect.runs(), 0);
}

/// An `Ok` value that can't be serialised after the body ran completes the key as having left
/// no outcome: a retry is told so (never "in progress", never a second run of the side effect).
async fn unserialisable_outcome_is_told_and_never_run_again(ctx: Context) {
    #[derive(Debug)]
    struct Unserialisable;
    impl serde::Serialize for Unserialisable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("not today"))
        }
    }
    impl<'de> serde::Deserialize<'de> for Unserialisable {
        fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
            Ok(Unserialisable)
        }
    }
    let idem = ctx.handle();
    let runs = AtomicUsize::new(0);
    let run = || {
        idem.run(call(&ctx, "o-22", 1), async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(Unserialisable)
        })
    };
    let err = run().await.unwrap_err();
    assert!(
        matches!(&err, Error::NotRecorded { cause, .. } if matches!(**cause, Error::Codec(_))),
        "got {err:?}"
    );
    assert!(err.ran_without_record() && !err.is_retryable());
    for _ in 0..2 {
        let retry = run().await.unwrap_err();
        assert!(matches!(retry, Error::Aborted { .. }), "got {retry:?}");
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the side effect must not run again"
    );
}
