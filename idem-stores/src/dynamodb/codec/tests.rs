//! The codec's unit tests: records round-trip through items, values are taken out of the
//! item read, and malformed items are reported.

use super::*;

fn names() -> AttributeNames {
    AttributeNames::default()
}

/// The primary key of the item for stored key `k`, as a table without a sort key has it.
fn key(k: &str) -> Item {
    Item::from([("pk".to_owned(), AttributeValue::S(k.to_owned()))])
}

fn fingerprint() -> Fingerprint {
    Fingerprint::of(&("order-42", 1_000)).unwrap()
}

#[test]
fn in_progress_round_trips() {
    let lease_until = Timestamp::from_millis(1_700_000_000_123);
    let record = InProgress::new(OwnerToken::generate(), fingerprint(), lease_until)
        .with_fencing_token(1_700_000_000_000_000)
        .with_attempt(2);
    let item = in_progress(&names(), key("k"), &record);
    // The sweeper may delete an in-progress item only once it is abandoned.
    assert_eq!(item["ttl"], number(1_700_000_061));
    assert_eq!(decode(&names(), item), Ok(Record::InProgress(record)));
}

#[test]
fn steps_round_trip_byte_for_byte() {
    let lease_until = Timestamp::from_millis(1_700_000_000_123);
    let kept_until = Timestamp::from_millis(1_700_003_600_001);
    let steps = Steps::new()
        .with_step("charge", br#""ch_1""#.to_vec())
        .with_step("raw", vec![0xff, 0x00, 0xfe])
        .with_kept_until(kept_until);
    let record =
        InProgress::new(OwnerToken::generate(), fingerprint(), lease_until).with_steps(steps);
    let item = in_progress(&names(), key("k"), &record);
    assert_eq!(item["steps_kept_until_ms"], number(1_700_003_600_001));
    assert_eq!(item["steps_ttl"], number(1_700_003_601));
    assert_eq!(
        item["ttl"],
        number(1_700_003_601),
        "the sweeper keeps the item while its steps are kept"
    );
    assert_eq!(decode(&names(), item), Ok(Record::InProgress(record)));
}

#[test]
fn a_reservation_holds_an_empty_steps_map() {
    let record = InProgress::new(OwnerToken::generate(), fingerprint(), Timestamp::EPOCH);
    let mut item = in_progress(&names(), key("k"), &record);
    assert_eq!(item["steps"], AttributeValue::M(HashMap::new()));
    assert!(!item.contains_key("steps_kept_until_ms"));
    item.remove("steps");
    assert_eq!(
        decode(&names(), item),
        Ok(Record::InProgress(record)),
        "an item written before steps existed has none"
    );
}

#[test]
fn malformed_steps_are_reported() {
    let steps = Steps::new()
        .with_step("charge", b"1".to_vec())
        .with_kept_until(Timestamp::from_millis(9));
    let record =
        InProgress::new(OwnerToken::generate(), fingerprint(), Timestamp::EPOCH).with_steps(steps);
    let good = in_progress(&names(), key("k"), &record);
    let text_step = AttributeValue::M(HashMap::from([(
        "charge".to_owned(),
        AttributeValue::S("1".into()),
    )]));
    let cases: Vec<(&str, Option<AttributeValue>)> = vec![
        ("steps", Some(AttributeValue::S("charge".into()))),
        ("steps", Some(text_step)),
        ("steps_kept_until_ms", None),
        ("steps_kept_until_ms", Some(AttributeValue::S("9".into()))),
    ];
    for (name, value) in cases {
        let mut item = good.clone();
        match value {
            Some(value) => item.insert(name.into(), value),
            None => item.remove(name),
        };
        let error = decode(&names(), item).unwrap_err();
        assert!(error.contains(name), "{name}: {error}");
    }
}

#[test]
fn completed_round_trips_both_outcomes() {
    for outcome in [
        Outcome::ok(b"{\"id\":1}".to_vec()),
        Outcome::err(b"\"declined\"".to_vec()),
        Outcome::Aborted,
    ] {
        let expires_at = Timestamp::from_millis(1_700_000_000_000);
        let record = Completed::new(fingerprint(), outcome, expires_at);
        let owner = OwnerToken::generate();
        let item = completed(&names(), key("k"), &owner, &record).unwrap();
        assert_eq!(super::owner(&names(), &item), Some(owner.as_str()));
        assert_eq!(item["ttl"], number(1_700_000_000));
        assert_eq!(decode(&names(), item), Ok(Record::Completed(record)));
    }
}

/// A completed item read back whose body is `body`, as DynamoDB returns it.
fn completed_with_body(body: AttributeValue) -> Item {
    let record = Completed::new(fingerprint(), Outcome::ok(b"0".to_vec()), Timestamp::EPOCH);
    let mut item = completed(&names(), key("k"), &OwnerToken::generate(), &record).unwrap();
    item.insert("body".into(), body);
    item
}

#[test]
fn a_body_is_taken_out_of_the_item_not_copied() {
    let bodies: [&[u8]; 4] = [b"", b"\"ch_1\"", b"\0iS\x02 not json \xff", &[0; 1 << 10]];
    for body in bodies {
        let read = match std::str::from_utf8(body) {
            Ok(text) => AttributeValue::S(text.to_owned()),
            Err(_) => AttributeValue::B(Blob::new(body.to_vec())),
        };
        let at = match &read {
            AttributeValue::S(text) => text.as_ptr(),
            AttributeValue::B(blob) => blob.as_ref().as_ptr(),
            _ => unreachable!(),
        };
        let Ok(Record::Completed(decoded)) = decode(&names(), completed_with_body(read)) else {
            panic!("a completed record");
        };
        assert_eq!(decoded.outcome().body(), body);
        if !body.is_empty() {
            assert_eq!(
                decoded.outcome().body().as_ptr(),
                at,
                "{body:?}: the bytes the SDK read"
            );
        }
    }
}

#[test]
fn step_values_are_taken_out_of_the_item_not_copied() {
    let steps = Steps::new()
        .with_step("charge", br#""ch_1""#.to_vec())
        .with_step("empty", Vec::new())
        .with_kept_until(Timestamp::from_millis(9));
    let record =
        InProgress::new(OwnerToken::generate(), fingerprint(), Timestamp::EPOCH).with_steps(steps);
    let item = in_progress(&names(), key("k"), &record);
    let AttributeValue::M(map) = &item["steps"] else {
        panic!("a map of steps");
    };
    let AttributeValue::B(charge) = &map["charge"] else {
        panic!("a binary step value");
    };
    let at = charge.as_ref().as_ptr();
    let Ok(Record::InProgress(decoded)) = decode(&names(), item) else {
        panic!("an in-progress record");
    };
    assert_eq!(decoded, record);
    assert_eq!(decoded.steps().get("charge").map(<[u8]>::as_ptr), Some(at));
    assert_eq!(decoded.steps().get("empty"), Some(&b""[..]));
}

#[test]
fn ttl_rounds_up() {
    assert_eq!(ttl_seconds(Timestamp::from_millis(0)), 0);
    assert_eq!(ttl_seconds(Timestamp::from_millis(1)), 1);
    assert_eq!(ttl_seconds(Timestamp::from_millis(1000)), 1);
    assert_eq!(ttl_seconds(Timestamp::from_millis(1001)), 2);
}

#[test]
fn malformed_items_are_reported() {
    let five = Timestamp::from_millis(5);
    let record = Completed::new(fingerprint(), Outcome::ok(b"1".to_vec()), five);
    let good = completed(&names(), key("k"), &OwnerToken::generate(), &record).unwrap();
    let cases: Vec<(&str, Option<AttributeValue>)> = vec![
        ("state", None),
        ("state", Some(AttributeValue::S("done".into()))),
        ("fingerprint", Some(AttributeValue::S("xyz".into()))),
        ("fingerprint", Some(AttributeValue::N("1".into()))),
        ("live_until_ms", Some(AttributeValue::N("-1".into()))),
        ("live_until_ms", Some(AttributeValue::N("1.5".into()))),
        ("live_until_ms", Some(AttributeValue::S("1".into()))),
        ("body", None),
        ("body", Some(AttributeValue::N("1".into()))),
        ("outcome", Some(AttributeValue::S("maybe".into()))),
    ];
    for (name, value) in cases {
        let mut item = good.clone();
        match value {
            Some(value) => item.insert(name.into(), value),
            None => item.remove(name),
        };
        let error = decode(&names(), item).unwrap_err();
        assert!(error.contains(name), "{error}");
    }
    let mut item = in_progress(
        &names(),
        key("k"),
        &InProgress::new(OwnerToken::generate(), fingerprint(), five).with_fencing_token(5_000),
    );
    item.remove("owner");
    assert!(decode(&names(), item).unwrap_err().contains("owner"));
    assert!(decode(&names(), Item::new()).is_err());
}

#[test]
fn size_counts_names_and_values() {
    let item = HashMap::from([
        ("ab".to_owned(), AttributeValue::S("héllo".into())),
        ("n".to_owned(), number(7)),
        ("b".to_owned(), AttributeValue::B(Blob::new(vec![0; 10]))),
    ]);
    assert_eq!(item_size(&item), (2 + 6) + (1 + 21) + (1 + 10));
}

#[test]
fn a_body_is_a_string_when_it_is_text_and_binary_when_it_starts_with_a_zero_byte() {
    let text = body_value(&Bytes::from_static(b"{\"receipt\":1}"));
    assert_eq!(text, AttributeValue::S("{\"receipt\":1}".into()));
    // UTF-8 all the same, as a short frame of idem-http's may be.
    let framed = body_value(&Bytes::from_static(b"\0iH\x01\x00\x00\xc9"));
    assert_eq!(
        framed,
        AttributeValue::B(Blob::new(b"\0iH\x01\x00\x00\xc9".to_vec()))
    );
    let binary = body_value(&Bytes::from_static(b"\xff"));
    assert!(matches!(binary, AttributeValue::B(_)), "{binary:?}");
}
