//! [`Number`]: a number as its exact decimal value, and the canonical text of that value.

use std::fmt;

use serde::{Serialize, Serializer};

/// The name of the newtype struct that a [`Number`] other than an integer of at most 128 bits
/// serializes as, around its canonical text: the fingerprint encoder knows the name and
/// encodes the text as a number, as `serde_json` does for its arbitrary-precision numbers.
pub(crate) const TOKEN: &str = "$idem_core::json::Number";

/// Integers with more digits than this are never 128-bit integers (`u128::MAX` has 39).
const MAX_INT_DIGITS: i128 = 39;

/// Canonical text is positional while the point falls in this range (`point` as in
/// [`Decimal::point`]): up to 40 integer digits, up to 5 zeros after the point. Scientific
/// notation beyond.
const POSITIONAL: std::ops::RangeInclusive<i128> = -5..=40;

/// 2^53: every integer up to this magnitude is an `f64` of its own, and its shortest decimal
/// is itself. A JSON integer beyond it that a parser read as a double may have been rounded.
pub const EXACT_IN_F64: f64 = 9_007_199_254_740_992.0;

/// The same for `f32`: 2^24.
const EXACT_IN_F32: f32 = 16_777_216.0;

/// A number by its exact decimal value: the one rule for "the same number" that idem's
/// fingerprints, its HTTP layer and its Lambda handler share (see [the module](super)).
///
/// ```
/// use idem_core::json::Number;
/// assert_eq!(Number::parse("1e2"), Some(Number::from(100u8)));
/// assert_eq!(Number::from(100.0f64), Number::from(100i64));
/// assert_eq!(Number::from(0.1f64), Number::parse("0.1").unwrap());
/// assert_eq!(Number::parse("-0.00").unwrap().to_string(), "0");
/// assert_eq!(Number::parse("12.50e-1").unwrap().to_string(), "1.25");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Number(Repr);

/// One representation per value: an integer that fits `i128` is `Int`, one above it that
/// fits `u128` is `Uint`, every other value is its canonical text.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    Int(i128),
    Uint(u128),
    Text(Box<str>),
}

/// How the fingerprint encoder writes a number: the integers on their own path, every other
/// value as its canonical text.
pub(crate) enum Encoded<'a> {
    Int(i128),
    Uint(u128),
    Text(&'a str),
}

impl Number {
    /// The number that JSON text `text` spells, exactly, or `None` when `text` is not a
    /// JSON number (or its exponent is beyond 64 bits).
    pub fn parse(text: &str) -> Option<Number> {
        super::parse::number(text.as_bytes())
    }

    /// The value of the shortest decimal that reads back as `value` (the nearest of those,
    /// the one with an even last digit on a tie: what `serde_json` writes), so that `0.1f64`
    /// is the number `0.1`. Every NaN is one value; `-0.0` is `0`.
    pub fn from_f64(value: f64) -> Number {
        Number::from_encoded(encode_f64(value, &mut StackText::default()))
    }

    /// The value of the shortest decimal that reads back as `value` as an `f32`, so that
    /// `0.1f32` is the number `0.1`.
    pub fn from_f32(value: f32) -> Number {
        Number::from_encoded(encode_f32(value, &mut StackText::default()))
    }

    fn from_encoded(encoded: Result<Encoded<'_>, fmt::Error>) -> Number {
        Number(match encoded {
            Ok(Encoded::Int(value)) => Repr::Int(value),
            Ok(Encoded::Uint(value)) => Repr::Uint(value),
            Ok(Encoded::Text(text)) => Repr::Text(text.into()),
            // A float's decimal is short: this is not reached.
            Err(fmt::Error) => Repr::Text("NaN".into()),
        })
    }

    /// The number `integer.fraction` × 10^`exponent`, from a JSON number's ASCII digits.
    pub(crate) fn from_parts(
        negative: bool,
        integer: &[u8],
        fraction: &[u8],
        exponent: i64,
    ) -> Option<Number> {
        let digits: Vec<u8> = integer.iter().chain(fraction).copied().collect();
        let exponent = exponent.checked_sub(i64::try_from(fraction.len()).ok()?)?;
        let decimal = Decimal::new(negative, &digits, exponent)?;
        Some(match decimal.integer() {
            Some(Encoded::Int(value)) => Number(Repr::Int(value)),
            Some(Encoded::Uint(value)) => Number(Repr::Uint(value)),
            _ => {
                let mut text = String::new();
                decimal.write(&mut text).ok()?;
                Number(Repr::Text(text.into()))
            }
        })
    }
}

/// How the encoder writes `value`: an integer within the exact range of doubles on the
/// integers' path at once, any other value by its shortest decimal, its text put in `text`.
pub(crate) fn encode_f64(value: f64, text: &mut StackText) -> Result<Encoded<'_>, fmt::Error> {
    float(
        value.fract() == 0.0 && value.abs() <= EXACT_IN_F64,
        value,
        text,
    )
}

/// [`encode_f64`] for an `f32`, by its own shortest decimal.
pub(crate) fn encode_f32(value: f32, text: &mut StackText) -> Result<Encoded<'_>, fmt::Error> {
    float(
        value.fract() == 0.0 && value.abs() <= EXACT_IN_F32,
        value,
        text,
    )
}

/// The float `value`; `small_integer` when it is an integer within the float's exact range.
fn float<F: zmij::Float + Into<f64> + Copy>(
    small_integer: bool,
    value: F,
    text: &mut StackText,
) -> Result<Encoded<'_>, fmt::Error> {
    let wide: f64 = value.into();
    if small_integer {
        // Exact: `wide` is an integer within 2^53.
        return Ok(Encoded::Int(wide as i128));
    }
    if wide.is_nan() {
        return Ok(Encoded::Text("NaN"));
    }
    if wide.is_infinite() {
        return Ok(Encoded::Text(if wide > 0.0 { "inf" } else { "-inf" }));
    }
    // serde_json's printer: the shortest decimal that reads back as `value`, the nearest of
    // those, the even one on a tie. (`std`'s `{:e}` breaks ties upwards: another number.)
    let mut printer = zmij::Buffer::new();
    let mut digits = [0u8; 64];
    let decimal = from_printed(printer.format_finite(value), &mut digits).ok_or(fmt::Error)?;
    if let Some(integer) = decimal.integer() {
        return Ok(integer);
    }
    decimal.write(text)?;
    Ok(Encoded::Text(text.as_str()))
}

/// The decimal that a JSON number's text (`-1.25e-7`, `0.001`, `1e+20`) spells, its digits
/// copied into `digits`.
fn from_printed<'d>(text: &str, digits: &'d mut [u8; 64]) -> Option<Decimal<'d>> {
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = text.split_once(['e', 'E']).unwrap_or((text, "0"));
    let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let count = integer.len() + fraction.len();
    let slots = digits.get_mut(..count)?;
    slots[..integer.len()].copy_from_slice(integer.as_bytes());
    slots[integer.len()..].copy_from_slice(fraction.as_bytes());
    if !slots.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let exponent: i64 = exponent.parse().ok()?;
    Decimal::new(
        negative,
        slots,
        exponent - i64::try_from(fraction.len()).ok()?,
    )
}

/// A finite decimal, `digits` × 10^`exponent`, with no leading or trailing zero in `digits`;
/// zero has no digits, exponent 0, and is not negative.
struct Decimal<'a> {
    negative: bool,
    digits: &'a [u8],
    exponent: i64,
}

impl<'a> Decimal<'a> {
    /// `digits` (ASCII) × 10^`exponent`, trimmed; `None` if the exponent leaves 64 bits.
    fn new(negative: bool, digits: &'a [u8], exponent: i64) -> Option<Self> {
        let leading = digits.iter().take_while(|&&digit| digit == b'0').count();
        let digits = &digits[leading..];
        let trailing = digits
            .iter()
            .rev()
            .take_while(|&&digit| digit == b'0')
            .count();
        let digits = &digits[..digits.len() - trailing];
        if digits.is_empty() {
            return Some(Decimal {
                negative: false,
                digits,
                exponent: 0,
            });
        }
        let exponent = exponent.checked_add(i64::try_from(trailing).ok()?)?;
        Some(Decimal {
            negative,
            digits,
            exponent,
        })
    }

    /// Where the point falls: the value is `0.digits` × 10^`point`.
    fn point(&self) -> i128 {
        self.digits.len() as i128 + i128::from(self.exponent)
    }

    /// The value as an `i128`, or a `u128` above that, when it is an integer that fits.
    fn integer(&self) -> Option<Encoded<'static>> {
        if self.exponent < 0 || self.point() > MAX_INT_DIGITS {
            return None;
        }
        let mut magnitude: u128 = 0;
        for &digit in self.digits {
            magnitude = magnitude
                .checked_mul(10)?
                .checked_add(u128::from(digit - b'0'))?;
        }
        for _ in 0..self.exponent {
            magnitude = magnitude.checked_mul(10)?;
        }
        if !self.negative {
            return Some(match i128::try_from(magnitude) {
                Ok(value) => Encoded::Int(value),
                Err(_) => Encoded::Uint(magnitude),
            });
        }
        // `i128::MIN`'s magnitude is one more than `i128::MAX`.
        let below_zero = 0i128.checked_sub_unsigned(magnitude)?;
        Some(Encoded::Int(below_zero))
    }

    /// The canonical text: positional (`-12.5`, `0.001`, `100`) while the point is in
    /// [`POSITIONAL`], else scientific with one digit before the point (`1.5e-9`, `1e400`).
    fn write(&self, out: &mut impl fmt::Write) -> fmt::Result {
        if self.digits.is_empty() {
            return out.write_char('0');
        }
        if self.negative {
            out.write_char('-')?;
        }
        let digits = |out: &mut dyn fmt::Write, slice: &[u8]| {
            slice
                .iter()
                .try_for_each(|&digit| out.write_char(char::from(digit)))
        };
        let zeros = |out: &mut dyn fmt::Write, count: i128| {
            (0..count).try_for_each(|_| out.write_char('0'))
        };
        let point = self.point();
        let count = self.digits.len() as i128;
        if !POSITIONAL.contains(&point) {
            digits(out, &self.digits[..1])?;
            if count > 1 {
                out.write_char('.')?;
                digits(out, &self.digits[1..])?;
            }
            return write!(out, "e{}", point - 1);
        }
        if point <= 0 {
            out.write_str("0.")?;
            zeros(out, -point)?;
            digits(out, self.digits)
        } else if point >= count {
            digits(out, self.digits)?;
            zeros(out, point - count)
        } else {
            // `point` is between 1 and the digit count here.
            let (whole, fraction) = self.digits.split_at(point as usize);
            digits(out, whole)?;
            out.write_char('.')?;
            digits(out, fraction)
        }
    }
}

/// Text on the stack, for the encoder's floats: a double's canonical text takes at most 42
/// bytes (a sign and 40 integer digits with a point).
pub(crate) struct StackText {
    bytes: [u8; 48],
    len: usize,
}

impl Default for StackText {
    fn default() -> Self {
        StackText {
            bytes: [0; 48],
            len: 0,
        }
    }
}

impl StackText {
    fn as_str(&self) -> &str {
        // Only `write_str` fills it, with whole `str`s.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

impl fmt::Write for StackText {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let end = self.len + text.len();
        let slot = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
        slot.copy_from_slice(text.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// The canonical text: digits as written positionally up to 40 integer digits and 5 zeros
/// after the point (`42`, `-1.5`, `0.00001`), scientific beyond (`1e40`, `1.5e-7`); `NaN`,
/// `inf`, `-inf` for what JSON cannot spell. Two numbers are equal exactly when their texts are.
impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Int(value) => value.fmt(f),
            Repr::Uint(value) => value.fmt(f),
            Repr::Text(text) => f.write_str(text),
        }
    }
}

impl fmt::Debug for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Number({self})")
    }
}

/// An integer of at most 128 bits serializes as that integer. Any other value serializes as
/// a newtype struct around its canonical text, which the fingerprint encoder encodes as a
/// number and other serializers see as a string, so that no digit is lost.
impl Serialize for Number {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Int(value) => serializer.serialize_i128(*value),
            Repr::Uint(value) => serializer.serialize_u128(*value),
            Repr::Text(text) => serializer.serialize_newtype_struct(TOKEN, &**text),
        }
    }
}

macro_rules! from_integers {
    ($($int:ty),*) => {$(
        impl From<$int> for Number {
            fn from(value: $int) -> Number {
                Number(Repr::Int(value.into()))
            }
        }
    )*};
}

from_integers!(i8, i16, i32, i64, i128, u8, u16, u32, u64);

impl From<u128> for Number {
    fn from(value: u128) -> Number {
        Number(match i128::try_from(value) {
            Ok(value) => Repr::Int(value),
            Err(_) => Repr::Uint(value),
        })
    }
}

impl From<f64> for Number {
    fn from(value: f64) -> Number {
        Number::from_f64(value)
    }
}

impl From<f32> for Number {
    fn from(value: f32) -> Number {
        Number::from_f32(value)
    }
}

/// A `serde_json` number: its integer, or the shortest decimal of its double.
impl From<&serde_json::Number> for Number {
    fn from(number: &serde_json::Number) -> Number {
        if let Some(value) = number.as_i64() {
            Number::from(value)
        } else if let Some(value) = number.as_u64() {
            Number::from(value)
        } else {
            // With serde_json's `arbitrary_precision`, the text holds every digit.
            Number::parse(&number.to_string())
                .unwrap_or_else(|| Number::from_f64(number.as_f64().unwrap_or(f64::NAN)))
        }
    }
}
