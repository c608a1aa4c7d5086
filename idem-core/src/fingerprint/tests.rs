//! The fingerprint's unit tests: what is equal, what differs, and how each is written.

use super::*;
use serde::ser::{Error as _, Serializer};
use std::collections::{BTreeMap, HashMap};

#[derive(Serialize)]
struct Request {
    order_id: String,
    amount: u64,
    meta: HashMap<String, String>,
}

#[derive(Serialize)]
struct Reordered {
    amount: u32,
    meta: BTreeMap<String, String>,
    order_id: &'static str,
}

#[test]
fn a_fingerprint_prints_as_its_hex_and_a_bad_one_says_what_it_is() {
    let fingerprint = Fingerprint::of(&"o-1").unwrap();
    let hex = fingerprint.to_hex();
    assert_eq!(fingerprint.to_string(), hex);
    assert_eq!(format!("{fingerprint:?}"), format!("Fingerprint({hex})"));
    let refused = "not hex".parse::<Fingerprint>().unwrap_err();
    assert_eq!(refused.to_string(), "a fingerprint is 64 hex digits");
}

fn request(pairs: &[(&str, &str)]) -> Request {
    Request {
        order_id: "o-1".into(),
        amount: 100,
        meta: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

#[test]
fn hashmap_order_does_not_matter() {
    let pairs: Vec<(String, String)> = (0..64)
        .map(|i| (format!("k{i}"), format!("v{i}")))
        .collect();
    let forward: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut backward = forward.clone();
    backward.reverse();
    let reference = Fingerprint::of(&request(&forward)).unwrap();
    for _ in 0..16 {
        // Each new HashMap has its own random iteration order.
        assert_eq!(Fingerprint::of(&request(&backward)).unwrap(), reference);
        assert_eq!(Fingerprint::of(&request(&forward)).unwrap(), reference);
    }
}

#[test]
fn field_order_integer_width_and_type_name_do_not_matter() {
    let a = request(&[("x", "1")]);
    let b = Reordered {
        amount: 100,
        meta: [("x".to_string(), "1".to_string())].into(),
        order_id: "o-1",
    };
    assert_eq!(Fingerprint::of(&a).unwrap(), Fingerprint::of(&b).unwrap());
}

#[test]
fn different_values_differ() {
    let a = Fingerprint::of(&request(&[("x", "1")])).unwrap();
    let b = Fingerprint::of(&request(&[("x", "2")])).unwrap();
    let c = Fingerprint::of(&request(&[("x", "1"), ("y", "1")])).unwrap();
    assert_ne!(a, b);
    assert_ne!(a, c);
    assert_ne!(
        Fingerprint::of(&vec![1, 2]).unwrap(),
        Fingerprint::of(&vec![2, 1]).unwrap()
    );
    assert_ne!(
        Fingerprint::of(&Some(0)).unwrap(),
        Fingerprint::of(&0).unwrap()
    );
    assert_ne!(Fingerprint::of(&"1").unwrap(), Fingerprint::of(&1).unwrap());
}

#[test]
fn argument_boundaries_are_unambiguous() {
    let mut ab_c = Fingerprinter::new();
    ab_c.add("ab").unwrap().add("c").unwrap();
    let mut a_bc = Fingerprinter::new();
    a_bc.add("a").unwrap().add("bc").unwrap();
    assert_ne!(ab_c.finish(), a_bc.finish());
    let mut nested = Fingerprinter::new();
    nested.add(&vec![vec![1], vec![]]).unwrap();
    let mut flat = Fingerprinter::new();
    flat.add(&vec![vec![], vec![1]]).unwrap();
    assert_ne!(nested.finish(), flat.finish());
}

#[test]
fn non_string_map_keys_are_canonical_too() {
    let a: HashMap<(u8, u8), bool> = (0..40).map(|i| ((i, i * 2), i % 2 == 0)).collect();
    let b: BTreeMap<(u8, u8), bool> = a.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(Fingerprint::of(&a).unwrap(), Fingerprint::of(&b).unwrap());
}

#[test]
fn integers_encode_by_value_whatever_their_width_or_size() {
    let values: [i128; 12] = [
        i128::MIN,
        i64::MIN.into(),
        -129,
        -128,
        -1,
        0,
        1,
        63,
        64,
        127,
        u64::MAX.into(),
        i128::MAX,
    ];
    let prints: Vec<Fingerprint> = values.iter().map(|v| Fingerprint::of(v).unwrap()).collect();
    for (i, a) in prints.iter().enumerate() {
        for b in &prints[i + 1..] {
            assert_ne!(a, b);
        }
    }
    assert_eq!(prints[4], Fingerprint::of(&-1i8).unwrap());
    assert_eq!(prints[10], Fingerprint::of(&u64::MAX).unwrap());
    assert_eq!(prints[11], Fingerprint::of(&(i128::MAX as u128)).unwrap());
    assert_ne!(
        Fingerprint::of(&u128::MAX).unwrap(),
        Fingerprint::of(&(u128::MAX - 1)).unwrap()
    );
}

#[test]
fn nested_maps_sort_in_place_without_disturbing_what_came_before() {
    let inner_a: HashMap<&str, u32> = [("z", 1), ("a", 2)].into();
    let inner_b: BTreeMap<&str, u32> = [("a", 2), ("z", 1)].into();
    let outer_a: HashMap<&str, HashMap<&str, u32>> =
        [("y", inner_a.clone()), ("b", inner_a)].into();
    let outer_b: BTreeMap<&str, BTreeMap<&str, u32>> =
        [("b", inner_b.clone()), ("y", inner_b)].into();
    let mut a = Fingerprinter::new();
    a.add("before")
        .unwrap()
        .add(&outer_a)
        .unwrap()
        .add("after")
        .unwrap();
    let mut b = Fingerprinter::new();
    b.add("before")
        .unwrap()
        .add(&outer_b)
        .unwrap()
        .add("after")
        .unwrap();
    assert_eq!(a.encoded, b.encoded);
    assert_eq!(a.finish(), b.finish());
}

/// A map that announces `announced` entries and gives `entries`.
struct Miscounted {
    announced: usize,
    entries: Vec<(&'static str, u32)>,
}

impl Serialize for Miscounted {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.announced))?;
        for (key, value) in &self.entries {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

#[test]
fn a_map_is_encoded_by_the_entries_it_gives_not_the_count_it_announced() {
    let entries = vec![("z", 1), ("a", 2), ("m", 3)];
    let honest: BTreeMap<&str, u32> = entries.iter().copied().collect();
    let expected = Fingerprint::of(&("before", &honest, "after")).unwrap();
    for announced in [0, 1, 3, 4, 200] {
        let map = Miscounted {
            announced,
            entries: entries.clone(),
        };
        assert_eq!(
            Fingerprint::of(&("before", &map, "after")).unwrap(),
            expected,
            "announced {announced}"
        );
    }
    let sorted = Miscounted {
        announced: 5,
        entries: vec![("a", 2), ("m", 3), ("z", 1)],
    };
    assert_eq!(
        Fingerprint::of(&("before", &sorted, "after")).unwrap(),
        expected
    );
}

#[test]
fn the_encoding_of_a_typical_request_is_shorter_than_its_json() {
    let request = request(&[("channel", "web")]);
    let mut fp = Fingerprinter::new();
    fp.add(&request).unwrap();
    let json = serde_json::to_vec(&request).unwrap();
    assert!(
        fp.encoded.len() < json.len(),
        "{} bytes encoded, {} of JSON",
        fp.encoded.len(),
        json.len()
    );
}

#[test]
fn hex_round_trips() {
    let fp = Fingerprint::of("x").unwrap();
    assert_eq!(fp.to_hex().parse(), Ok(fp));
    assert_eq!("zz".parse::<Fingerprint>(), Err(ParseFingerprintError));
    assert!("g".repeat(64).parse::<Fingerprint>().is_err());
}

struct Failing;
impl Serialize for Failing {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(S::Error::custom("cannot serialise"))
    }
}

#[test]
fn a_failing_serialize_is_a_codec_error() {
    let err = Fingerprint::of(&Failing).unwrap_err();
    assert!(matches!(err, Error::Codec(_)), "{err}");
    let source = std::error::Error::source(&err).expect("the encoder's error");
    assert_eq!(source.to_string(), "cannot serialise");
}

/// A map whose entries come in reverse order, `entries` of them, each with a long key.
struct Reversed {
    entries: u32,
    announce: bool,
}

impl Serialize for Reversed {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(self.announce.then_some(self.entries as usize))?;
        for n in (0..self.entries).rev() {
            map.serialize_entry(&format!("key-{n:04}-{}", "x".repeat(20)), &n)?;
        }
        map.end()
    }
}

#[test]
fn a_large_map_in_any_order_fingerprints_as_its_sorted_self() {
    // Over the 512 bytes sorted on the stack: the entries are rewritten after themselves.
    let sorted: BTreeMap<String, u32> = (0..100)
        .map(|n| (format!("key-{n:04}-{}", "x".repeat(20)), n))
        .collect();
    for announce in [true, false] {
        assert_eq!(
            Fingerprint::of(&Reversed {
                entries: 100,
                announce
            })
            .unwrap(),
            Fingerprint::of(&sorted).unwrap(),
            "announced: {announce}"
        );
    }
}

/// A map written key, then value, as serde lets an impl do, in the order given.
struct KeyThenValue(Vec<(&'static str, u32)>);

impl Serialize for KeyThenValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_key(key)?;
            map.serialize_value(value)?;
        }
        map.end()
    }
}

#[test]
fn a_map_written_key_then_value_is_the_map() {
    let of = |entries: Vec<(&'static str, u32)>| Fingerprint::of(&KeyThenValue(entries)).unwrap();
    let sorted: BTreeMap<&str, u32> = [("a", 1), ("b", 2)].into();
    assert_eq!(
        of(vec![("b", 2), ("a", 1)]),
        Fingerprint::of(&sorted).unwrap()
    );
    assert_ne!(of(vec![("a", 1)]), of(vec![("a", 2)]), "values count");
    assert_ne!(of(vec![("a", 1)]), of(vec![("b", 1)]), "keys count");
}

#[test]
fn where_one_map_ends_and_the_next_begins_counts() {
    let ab: BTreeMap<&str, u32> = [("a", 1), ("b", 2)].into();
    let a: BTreeMap<&str, u32> = [("a", 1)].into();
    let b: BTreeMap<&str, u32> = [("b", 2)].into();
    assert_ne!(
        Fingerprint::of(&vec![ab, BTreeMap::new()]).unwrap(),
        Fingerprint::of(&vec![a, b]).unwrap()
    );
}

#[derive(Serialize)]
enum Declared {
    V { a: u32, b: u32 },
}

#[derive(Serialize)]
enum Reversed2 {
    V { b: u32, a: u32 },
}

#[test]
fn a_struct_variant_fingerprints_by_field_names_not_their_order() {
    assert_eq!(
        Fingerprint::of(&Declared::V { a: 1, b: 2 }).unwrap(),
        Fingerprint::of(&Reversed2::V { b: 2, a: 1 }).unwrap()
    );
}

/// A newtype under the JSON number's private name whose value is no text.
struct FakeNumber;

impl Serialize for FakeNumber {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_newtype_struct(crate::json::NUMBER_TOKEN, &5u8)
    }
}

#[test]
fn a_number_token_around_no_text_is_refused() {
    let err = Fingerprint::of(&FakeNumber).unwrap_err();
    let source = std::error::Error::source(&err).expect("the encoder's error");
    assert_eq!(source.to_string(), "a number must serialize as its text");
}

#[test]
fn lengths_and_numbers_are_leb128_varints() {
    let encoded = |value: u64| {
        let mut out = Vec::new();
        canonical::encode(&value, &mut out).unwrap();
        out
    };
    // Each encoding is the tag, then the number zigzagged (so that a signed and an
    // unsigned value encode alike) as a varint: 2 × 64 = 128 takes two bytes, never one
    // (0x80 alone would say "more follows").
    let (tag_0, rest_0) = encoded(0)
        .split_first()
        .map(|(t, r)| (*t, r.to_vec()))
        .unwrap();
    assert_eq!(rest_0, [0x00]);
    let tail = |value: u64| {
        let bytes = encoded(value);
        assert_eq!(bytes[0], tag_0, "one tag for every u64");
        bytes[1..].to_vec()
    };
    assert_eq!(tail(63), [0x7e]);
    assert_eq!(tail(64), [0x80, 0x01]);
    assert_eq!(tail(150), [0xac, 0x02]);
    let signed = {
        let mut out = Vec::new();
        canonical::encode(&64_i64, &mut out).unwrap();
        out
    };
    assert_eq!(
        signed,
        encoded(64),
        "a signed and an unsigned 64 encode alike"
    );
}
