//! Properties of the canonical encoding, on generated values: values that differ fingerprint
//! apart, and the equalities the rule promises hold (numbers by value, map key order, the
//! formatting of JSON text).

use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use serde::Serialize;
use serde_json::Value;

use super::Fingerprint;
use crate::json::CanonicalJson;

fn print<T: Serialize + ?Sized>(value: &T) -> Fingerprint {
    Fingerprint::of(value).unwrap()
}

/// A value of every serde kind, nested.
#[derive(Clone, Debug, PartialEq, Serialize)]
enum Shape {
    Unit,
    Flag(bool),
    Small(i8),
    Wide(i64),
    Huge(u128),
    Float(f64),
    Letter(char),
    Text(String),
    Missing(Option<()>),
    Maybe(Option<Box<Shape>>),
    Pair(Box<Shape>, Box<Shape>),
    List(Vec<Shape>),
    Map(BTreeMap<String, Shape>),
    Named { first: Box<Shape>, second: u8 },
}

fn shape() -> impl Strategy<Value = Shape> {
    let leaf = prop_oneof![
        Just(Shape::Unit),
        any::<bool>().prop_map(Shape::Flag),
        any::<i8>().prop_map(Shape::Small),
        any::<i64>().prop_map(Shape::Wide),
        any::<u128>().prop_map(Shape::Huge),
        // Not integral, so that no float is a number another variant can hold.
        (-1000i32..1000).prop_map(|n| Shape::Float(f64::from(n) + 0.5)),
        any::<char>().prop_map(Shape::Letter),
        "[a-c]{0,3}".prop_map(Shape::Text),
        Just(Shape::Missing(None)),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::option::of(inner.clone()).prop_map(|v| Shape::Maybe(v.map(Box::new))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Shape::Pair(Box::new(a), Box::new(b))),
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Shape::List),
            proptest::collection::btree_map("[a-c]{0,2}", inner.clone(), 0..4).prop_map(Shape::Map),
            (inner, any::<u8>()).prop_map(|(first, second)| Shape::Named {
                first: Box::new(first),
                second,
            }),
        ]
    })
}

/// A JSON value with integers, non-integral numbers, strings and nesting.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1000i32..1000).prop_map(|n| Value::from(f64::from(n) / 8.0 + 0.0625)),
        "[a-c\"\\\\é]{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-d]{0,2}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// `value` as JSON text with every object's members in reverse order, spaces between tokens,
/// and each integer written with an exponent (`12` as `120e-1`).
fn reworded(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(reworded).collect();
            format!("[ {} ]", items.join(" , "))
        }
        Value::Object(members) => {
            let members: Vec<String> = members
                .iter()
                .rev()
                .map(|(key, value)| format!("{} : {}", Value::from(key.as_str()), reworded(value)))
                .collect();
            format!("{{ {} }}", members.join(" , "))
        }
        Value::Number(number) => match number.as_i64() {
            Some(0) => "0.0e0".to_owned(),
            Some(n) => format!("{n}0e-1"),
            None => number.to_string(),
        },
        other => other.to_string(),
    }
}

proptest! {
    // No regression files: mutation runs fail these on purpose, in the source tree.
    #![proptest_config(ProptestConfig {
        cases: 128,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Two values of every serde kind, nested, fingerprint alike exactly when they are equal.
    #[test]
    fn values_fingerprint_apart_exactly_when_they_differ(a in shape(), b in shape()) {
        prop_assert_eq!(a == b, print(&a) == print(&b), "{:?} and {:?}", a, b);
        prop_assert_eq!(print(&a), print(&a.clone()));
    }

    /// A JSON value, its text however it is written (member order, spacing, `10e-1` for
    /// `1`) and the same value read by the rule fingerprint alike.
    #[test]
    fn json_text_fingerprints_by_its_value(value in json()) {
        let expected = print(&value);
        for text in [value.to_string(), serde_json::to_string_pretty(&value).unwrap(), reworded(&value)] {
            let parsed = CanonicalJson::parse(text.as_bytes()).unwrap();
            prop_assert_eq!(print(&parsed), expected, "{}", text);
        }
    }

    /// A map fingerprints alike whatever order it gives its entries in.
    #[test]
    fn map_order_does_not_matter(entries in proptest::collection::vec(("[a-e]{0,3}", shape()), 0..8)) {
        let sorted: BTreeMap<String, Shape> = entries.iter().cloned().collect();
        let hashed: HashMap<String, Shape> = sorted.clone().into_iter().collect();
        prop_assert_eq!(print(&sorted), print(&hashed));
    }

    /// An integer is its value, whatever its width, and so is a float that holds it.
    #[test]
    fn numbers_fingerprint_by_value(n in any::<i32>()) {
        let expected = print(&n);
        prop_assert_eq!(print(&i64::from(n)), expected);
        prop_assert_eq!(print(&i128::from(n)), expected);
        prop_assert_eq!(print(&f64::from(n)), expected);
        prop_assert_eq!(print(&Value::from(f64::from(n))), expected);
        if let Ok(unsigned) = u64::try_from(n) {
            prop_assert_eq!(print(&unsigned), expected);
        }
        if let Ok(small) = i16::try_from(n) {
            prop_assert_eq!(print(&f32::from(small)), expected);
        }
        let text = format!("{n}.000e0");
        prop_assert_eq!(print(&CanonicalJson::parse(text.as_bytes()).unwrap()), expected);
        prop_assert_ne!(print(&(f64::from(n) + 0.5)), expected);
    }
}
