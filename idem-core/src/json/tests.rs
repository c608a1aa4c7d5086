//! The rule, as a table: which spellings are one number, in JSON text, in Rust, and in a
//! fingerprint.

use serde::Serialize;
use serde_json::json;

use super::{CanonicalJson, Number};
use crate::fingerprint::Fingerprint;

fn number(text: &str) -> Number {
    Number::parse(text).unwrap_or_else(|| panic!("{text:?} is a JSON number"))
}

fn print<T: Serialize + ?Sized>(value: &T) -> Fingerprint {
    Fingerprint::of(value).unwrap()
}

/// The fingerprint of the JSON text `text`, read canonically.
fn text_print(text: &str) -> Fingerprint {
    print(&CanonicalJson::parse(text.as_bytes()).unwrap())
}

#[test]
fn json_spellings_of_one_value_are_one_number() {
    let table: &[(&[&str], &str)] = &[
        (&["1", "1.0", "1.00", "10e-1", "1e0", "0.1e1", "1E+0"], "1"),
        (&["-0", "0", "0.000", "-0e5", "0e-9"], "0"),
        (&["100", "1e2", "1.00E2", "100.0", "1000e-1"], "100"),
        (&["1.5", "15e-1", "0.15e1", "1.50"], "1.5"),
        (&["-12.5", "-125e-1"], "-12.5"),
        (&["0.1", "1e-1"], "0.1"),
        (&["0.00001", "1e-5"], "0.00001"),
        (&["0.000001", "1e-6"], "0.000001"),
        (&["0.0000001", "1e-7"], "1e-7"),
        (&["1e40", "10e39"], "1e40"),
        (&["1e39"], &format!("1{}", "0".repeat(39))),
        (&["1.00000000000000001"], "1.00000000000000001"),
        (
            &["340282366920938463463374607431768211455"],
            &u128::MAX.to_string(),
        ),
        (
            &["-170141183460469231731687303715884105728"],
            &i128::MIN.to_string(),
        ),
        (
            &["123456789012345678901234567890123456789012"],
            "1.23456789012345678901234567890123456789012e41",
        ),
        (&["1e400", "10e399"], "1e400"),
        (&["-2.5e-400"], "-2.5e-400"),
    ];
    for (spellings, canonical) in table {
        for spelling in *spellings {
            assert_eq!(number(spelling).to_string(), *canonical, "{spelling}");
            assert_eq!(number(spelling), number(spellings[0]), "{spelling}");
            assert_eq!(text_print(spelling), text_print(spellings[0]), "{spelling}");
        }
    }
}

#[test]
fn different_values_are_different_numbers() {
    let distinct = [
        "1",
        "1.00000000000000001",
        "0.99999999999999999",
        "-1",
        "0",
        "0.1",
        "1e-400",
        "12345678901234567890123",
        "12345678901234567890124",
        "-9223372036854775809",
        "-9223372036854775810",
        "340282366920938463463374607431768211456",
        "-170141183460469231731687303715884105729",
        "1e400",
        "1e401",
    ];
    for (i, a) in distinct.iter().enumerate() {
        for b in &distinct[i + 1..] {
            assert_ne!(number(a), number(b), "{a} and {b}");
            assert_ne!(number(a).to_string(), number(b).to_string());
            assert_ne!(text_print(a), text_print(b), "{a} and {b}");
        }
    }
}

#[test]
fn what_is_not_a_json_number_is_refused() {
    for bad in [
        "",
        "01",
        "1.",
        ".5",
        "+1",
        "1e",
        "- 1",
        "1 ",
        " 1",
        "0x10",
        "NaN",
        "1e99999999999999999999",
    ] {
        assert_eq!(Number::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn rust_numbers_of_one_value_fingerprint_alike_whatever_their_type() {
    let hundred = print(&100u8);
    for other in [
        print(&100i8),
        print(&100u64),
        print(&100i128),
        print(&100u128),
        print(&100.0f32),
        print(&100.0f64),
        print(&json!(100)),
        print(&json!(100.0)),
        print(&number("1e2")),
        text_print("100.000"),
    ] {
        assert_eq!(other, hundred);
    }
    assert_eq!(print(&-1i8), print(&-1.0f64));
    assert_eq!(print(&1.5f32), print(&1.5f64));
    assert_eq!(print(&1.5f64), text_print("15e-1"));
    assert_eq!(print(&0.1f64), text_print("0.1"));
    assert_eq!(
        print(&0.1f32),
        text_print("0.1"),
        "an f32 by its own shortest decimal"
    );
    assert_eq!(print(&-0.0f64), print(&0u8));
    assert_eq!(print(&f64::NAN), print(&-f64::NAN));
    assert_eq!(print(&f32::NAN), print(&f64::NAN));
    assert_eq!(print(&f64::INFINITY), print(&f32::INFINITY));
    assert_eq!(print(&1e20f64), print(&100_000_000_000_000_000_000u128));
    assert_eq!(print(&u64::MAX), text_print("18446744073709551615"));
    assert_eq!(print(&u128::MAX), text_print(&u128::MAX.to_string()));
    assert_eq!(print(&i128::MIN), text_print(&i128::MIN.to_string()));

    assert_ne!(print(&100u8), print(&101.0f64));
    assert_ne!(print(&0.1f64), print(&0.2f64));
    assert_ne!(print(&0.1f64), text_print("0.10000000000000001"));
    assert_ne!(print(&f64::INFINITY), print(&f64::NEG_INFINITY));
    assert_ne!(print(&f64::NAN), print(&f64::INFINITY));
    assert_ne!(print(&1u8), print(&"1"), "a number is not its text");
    assert_ne!(print(&f64::NAN), print(&"NaN"));
    assert_ne!(print(&number("1.5")), print(&"1.5"));
}

#[test]
fn numbers_from_rust_values_are_their_shortest_decimal() {
    assert_eq!(Number::from(0.1f64), number("0.1"));
    assert_eq!(Number::from(0.1f32), number("0.1"));
    assert_eq!(Number::from(100.0f64), Number::from(100u8));
    assert_eq!(Number::from(-0.0f64), Number::from(0i64));
    assert_eq!(Number::from(1e300f64).to_string(), "1e300");
    assert_eq!(Number::from(5e-324f64).to_string(), "5e-324");
    assert_eq!(Number::from(f64::NAN).to_string(), "NaN");
    assert_eq!(Number::from(f64::NEG_INFINITY).to_string(), "-inf");
    // 2^60 as a double is read as the shortest decimal serde_json writes for it.
    assert_eq!(
        Number::from((1u64 << 60) as f64),
        number("1152921504606847000")
    );
    assert_ne!(Number::from((1u64 << 60) as f64), Number::from(1u64 << 60));
    assert_eq!(Number::from(u128::MAX), number(&u128::MAX.to_string()));
    // Halfway between two shortest decimals: the even one, as serde_json writes it.
    assert_eq!(
        Number::from(1_394_865_425_023_536.2f64).to_string(),
        "1394865425023536.2"
    );
    assert_eq!(Number::from(314_641.12f32).to_string(), "314641.12");
}

/// The rule takes a float at the digits serde_json writes: Rust's shortest decimal and
/// serde_json's must agree, on every kind of double.
#[test]
fn a_double_is_the_number_serde_json_writes_for_it() {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut bits = || {
        // xorshift64*: a fixed sequence, so a failure repeats.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    for _ in 0..100_000 {
        let double = f64::from_bits(bits());
        if !double.is_finite() {
            continue;
        }
        let written = serde_json::to_string(&double).unwrap();
        assert_eq!(Number::from(double), number(&written), "{double:e}");
        assert_eq!(print(&double), text_print(&written), "{double:e}");
        let single = f32::from_bits(bits() as u32);
        if single.is_finite() {
            let written = serde_json::to_string(&single).unwrap();
            assert_eq!(
                Number::from(single),
                number(&written),
                "{single:e} {written}"
            );
        }
    }
}

#[test]
fn serde_json_numbers_follow_the_rule() {
    for (value, text) in [
        (json!(42), "42"),
        (json!(42.0), "42"),
        (json!(-7), "-7"),
        (json!(1.5), "1.5"),
    ] {
        let serde_json::Value::Number(inner) = &value else {
            unreachable!()
        };
        assert_eq!(Number::from(inner).to_string(), text);
    }
    assert_eq!(
        Number::from(&serde_json::Number::from(u64::MAX)),
        Number::from(u64::MAX)
    );
}

#[test]
fn a_tree_fingerprints_as_the_same_value_built_in_rust() {
    #[derive(Serialize)]
    struct Order {
        id: &'static str,
        amount: u32,
        rate: f64,
        tags: Vec<&'static str>,
    }
    let order = Order {
        id: "o-1",
        amount: 100,
        rate: 0.25,
        tags: vec!["a", "b"],
    };
    let from_text = text_print(r#"{"tags":["a","b"],"rate":25e-2,"id":"o-1","amount":1e2}"#);
    assert_eq!(print(&order), from_text);
    assert_eq!(
        print(&json!({"id":"o-1","amount":100.0,"rate":0.25,"tags":["a","b"]})),
        from_text
    );
    assert_ne!(
        text_print(r#"{"tags":["b","a"],"rate":0.25,"id":"o-1","amount":100}"#),
        from_text
    );
}

#[test]
fn other_serializers_see_every_digit() {
    let exact =
        CanonicalJson::parse(br#"[1.00000000000000001, 1e2, 12345678901234567890123]"#).unwrap();
    assert_eq!(
        serde_json::to_string(&exact).unwrap(),
        r#"["1.00000000000000001",100,12345678901234567890123]"#
    );
}

#[test]
fn a_number_debugs_as_its_canonical_text() {
    assert_eq!(format!("{:?}", number("1.50")), "Number(1.5)");
    assert_eq!(format!("{:?}", number("-7")), "Number(-7)");
}
