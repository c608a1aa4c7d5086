//! Every kind of value serde gives: two values of one kind fingerprint apart, and so do values
//! of two kinds, except where the canonical encoding promises otherwise (numbers by value, type
//! names left out).

use std::collections::BTreeMap;
use std::fmt::Debug;

use serde::{Serialize, Serializer};

use super::{canonical, Fingerprint, Fingerprinter};

fn print<T: Serialize + ?Sized>(value: &T) -> Fingerprint {
    Fingerprint::of(value).unwrap()
}

#[track_caller]
fn apart<A: Serialize + Debug, B: Serialize + Debug>(a: A, b: B) {
    assert_ne!(print(&a), print(&b), "{a:?} and {b:?} fingerprint alike");
}

#[derive(Serialize, Debug)]
enum Kind {
    Unit,
    Other,
    Newtype(u8),
    Tuple(u8, u8),
    Struct { a: u8 },
}

#[derive(Serialize, Debug)]
struct Wrapper(u32);

#[derive(Serialize, Debug)]
struct Pair(u8, u8);

#[derive(Serialize, Debug)]
struct Empty;

#[derive(Serialize, Debug)]
struct Fields {
    a: u8,
}

/// Bytes as serde's byte-array kind, not a sequence of numbers.
#[derive(Debug)]
struct Bytes(&'static [u8]);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.0)
    }
}

#[test]
fn two_values_of_every_kind_fingerprint_apart() {
    apart(true, false);
    apart(1i8, 2i8);
    apart(1i16, 2i16);
    apart(1i32, 2i32);
    apart(1i64, 2i64);
    apart(1i128, 2i128);
    apart(1u8, 2u8);
    apart(1u16, 2u16);
    apart(1u32, 2u32);
    apart(1u64, 2u64);
    apart(1u128, 2u128);
    apart(1.5f32, 2.5f32);
    apart(1.5f64, 2.5f64);
    apart('a', 'b');
    apart("a", "b");
    apart(Bytes(b"a"), Bytes(b"b"));
    apart(Some(1), Some(2));
    apart([None, Some(1)], [Some(1)]);
    apart([(), ()], [()]);
    apart([Empty, Empty], [Empty]);
    apart(Kind::Unit, Kind::Other);
    apart(Wrapper(1), Wrapper(2));
    apart(Kind::Newtype(1), Kind::Newtype(2));
    apart(vec![1, 2], vec![1]);
    apart(Pair(1, 2), Pair(2, 1));
    apart(Kind::Tuple(1, 2), Kind::Tuple(2, 1));
    apart(BTreeMap::from([("a", 1)]), BTreeMap::from([("a", 2)]));
    apart(BTreeMap::from([("a", 1)]), BTreeMap::from([("b", 1)]));
    apart(Fields { a: 1 }, Fields { a: 2 });
    apart(Kind::Struct { a: 1 }, Kind::Struct { a: 2 });
}

#[test]
fn a_sequence_ends_where_it_ends() {
    apart((vec![1], 2), (vec![1, 2],));
    apart((vec![vec![1]], 2), (vec![vec![1], vec![]],));
    apart((Pair(1, 2), 3), ((1, 2, 3),));
    apart((Kind::Tuple(1, 2), 3), (Kind::Tuple(1, 2),));
}

#[test]
fn values_of_different_kinds_fingerprint_apart() {
    let values: Vec<(&str, Fingerprint)> = vec![
        ("false", print(&false)),
        ("true", print(&true)),
        ("0", print(&0)),
        ("0.5", print(&0.5)),
        ("'0'", print(&'0')),
        ("\"0\"", print(&"0")),
        ("b\"0\"", print(&Bytes(b"0"))),
        ("None", print(&None::<u8>)),
        ("Some(0)", print(&Some(0))),
        ("Some(())", print(&Some(()))),
        ("()", print(&())),
        ("Kind::Unit", print(&Kind::Unit)),
        ("Kind::Newtype(0)", print(&Kind::Newtype(0))),
        ("[0]", print(&[0])),
        ("Kind::Tuple(0, 0)", print(&Kind::Tuple(0, 0))),
        ("{a: 0}", print(&Fields { a: 0 })),
        ("Kind::Struct { a: 0 }", print(&Kind::Struct { a: 0 })),
        ("no argument", Fingerprint::empty()),
    ];
    for (i, (a, print_a)) in values.iter().enumerate() {
        for (b, print_b) in &values[i + 1..] {
            assert_ne!(print_a, print_b, "{a} and {b} fingerprint alike");
        }
    }
}

#[test]
fn type_names_are_left_out() {
    assert_eq!(print(&Wrapper(7)), print(&7u32));
    assert_eq!(print(&Empty), print(&()));
    assert_eq!(print(&Pair(1, 2)), print(&(1u8, 2u8)));
    assert_eq!(print(&Fields { a: 1 }), print(&BTreeMap::from([("a", 1)])));
}

#[test]
fn lengths_are_leb128_varints() {
    // 200 is 0b1_1100_1000: the low seven bits with the continuation bit, then 1.
    let mut out = Vec::new();
    canonical::encode(&"x".repeat(200), &mut out).unwrap();
    assert_eq!(out[..3], [b's', 0xc8, 0x01]);
    let mut out = Vec::new();
    canonical::encode(&"x".repeat(300), &mut out).unwrap();
    assert_eq!(out[..3], [b's', 0xac, 0x02]);
}

#[test]
fn a_long_string_is_not_two_short_ones() {
    // Were a length's continuation bit flipped rather than set, the first string's length
    // would read as 127 and the text after it as a second string.
    let long = format!("{}s\x7f{}", "a".repeat(126), "b".repeat(127));
    let mut one = Fingerprinter::new();
    one.add(&long).unwrap();
    let mut two = Fingerprinter::new();
    two.add(&format!("\x01{}", "a".repeat(126)))
        .unwrap()
        .add(&"b".repeat(127))
        .unwrap();
    assert_ne!(one.finish(), two.finish());
}

#[test]
fn the_raw_digest_is_the_one_given() {
    for bytes in [[0u8; 32], [1; 32], [0xab; 32]] {
        let fingerprint = Fingerprint::from_bytes(bytes);
        assert_eq!(fingerprint.as_bytes(), &bytes);
    }
    assert_ne!(print(&1).as_bytes(), print(&2).as_bytes());
}
