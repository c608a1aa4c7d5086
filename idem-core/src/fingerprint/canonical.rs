//! A canonical, self-delimiting binary encoding of any `Serialize` value, used for fingerprints.
//!
//! Canonical means: values that mean the same encode the same. Map entries (and struct fields,
//! which are encoded as maps) are sorted by their encoded key, so a `HashMap` encodes the same
//! whatever its iteration order, and reordering a struct's fields does not change it. Numbers
//! encode by [the rule of `crate::json`](crate::json): an integer of any width, a float and a
//! JSON decimal of one value encode alike. Type names are left out. Every value starts with a
//! tag and is self-delimiting, so a sequence of values encodes injectively.
//!
//! Lengths and integers are LEB128 varints (integers zigzagged first), so that the common small
//! ones take a byte or two: the encoding is shorter than the value's JSON, and SHA-256 over it
//! costs less.

use serde::ser::{self, Serialize};

use crate::error::{BoxError, Message};
use crate::json::{self, Encoded, StackText};

/// Appends the canonical encoding of `value` to `out`.
pub(crate) fn encode<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), BoxError> {
    value
        .serialize(Encoder { out })
        .map_err(|e| Box::new(e) as BoxError)
}

mod tag {
    pub const UNIT: u8 = b'0';
    pub const FALSE: u8 = b'f';
    pub const TRUE: u8 = b't';
    pub const INT: u8 = b'i';
    pub const UINT128: u8 = b'U';
    /// A number that is not an integer of at most 128 bits: its canonical text.
    pub const DECIMAL: u8 = b'd';
    pub const CHAR: u8 = b'c';
    pub const STR: u8 = b's';
    pub const BYTES: u8 = b'b';
    pub const NONE: u8 = b'n';
    pub const SOME: u8 = b'o';
    pub const SEQ: u8 = b'[';
    pub const SEQ_END: u8 = b']';
    pub const MAP: u8 = b'{';
    pub const VARIANT: u8 = b'v';
}

/// The error the encoder reports: custom errors from `Serialize` impls.
#[derive(Debug)]
pub(crate) struct EncodeError(Message);

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for EncodeError {}

impl ser::Error for EncodeError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        EncodeError(Message(msg.to_string()))
    }
}

struct Encoder<'a> {
    out: &'a mut Vec<u8>,
}

/// Appends `value` as an unsigned LEB128 varint: seven bits a byte, low bits first, the high
/// bit set on every byte but the last.
fn varint(out: &mut Vec<u8>, mut value: u128) {
    // Bounded by the longest varint, so that no slip in the loop can spin.
    for _ in 0..MAX_VARINT_BYTES {
        if value < 0x80 {
            out.push(value as u8);
            return;
        }
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
}

/// A `u128` takes at most 19 bytes, seven bits each.
const MAX_VARINT_BYTES: usize = 19;

/// `value` with its sign in the lowest bit, so that small negative numbers stay short too.
fn zigzag(value: i128) -> u128 {
    ((value << 1) ^ (value >> 127)) as u128
}

impl Encoder<'_> {
    fn bytes(&mut self, tag: u8, bytes: &[u8]) {
        self.out.push(tag);
        varint(self.out, bytes.len() as u128);
        self.out.extend_from_slice(bytes);
    }

    fn int(&mut self, value: i128) {
        self.out.push(tag::INT);
        varint(self.out, zigzag(value));
    }

    fn number(&mut self, number: Encoded<'_>) {
        match number {
            Encoded::Int(value) => self.int(value),
            Encoded::Uint(value) => self.uint(value),
            Encoded::Text(text) => self.bytes(tag::DECIMAL, text.as_bytes()),
        }
    }

    fn uint(&mut self, value: u128) {
        match i128::try_from(value) {
            Ok(value) => self.int(value),
            Err(_) => {
                self.out.push(tag::UINT128);
                varint(self.out, value);
            }
        }
    }

    /// A float, by [the rule](crate::json) through `encode` (`json::encode_f64` or `_f32`).
    fn float<F>(mut self, value: F, encode: fn(F, &mut StackText) -> FloatEncoded<'_>) -> Result {
        let mut text = StackText::default();
        let number = encode(value, &mut text)
            .map_err(|_| <EncodeError as ser::Error>::custom("a float's text did not fit"))?;
        self.number(number);
        Ok(())
    }

    fn variant(&mut self, name: &str) {
        self.bytes(tag::VARIANT, name.as_bytes());
    }
}

type FloatEncoded<'t> = std::result::Result<Encoded<'t>, std::fmt::Error>;

type Result<T = (), E = EncodeError> = std::result::Result<T, E>;

impl<'a> ser::Serializer for Encoder<'a> {
    type Ok = ();
    type Error = EncodeError;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Seq<'a>;
    type SerializeMap = Map<'a>;
    type SerializeStruct = Map<'a>;
    type SerializeStructVariant = Map<'a>;

    fn serialize_bool(self, v: bool) -> Result {
        self.out.push(if v { tag::TRUE } else { tag::FALSE });
        Ok(())
    }
    fn serialize_i8(mut self, v: i8) -> Result {
        self.int(v.into());
        Ok(())
    }
    fn serialize_i16(mut self, v: i16) -> Result {
        self.int(v.into());
        Ok(())
    }
    fn serialize_i32(mut self, v: i32) -> Result {
        self.int(v.into());
        Ok(())
    }
    fn serialize_i64(mut self, v: i64) -> Result {
        self.int(v.into());
        Ok(())
    }
    fn serialize_i128(mut self, v: i128) -> Result {
        self.int(v);
        Ok(())
    }
    fn serialize_u8(mut self, v: u8) -> Result {
        self.int(v.into());
        Ok(())
    }
    fn serialize_u16(mut self, v: u16) -> Result {
        self.int(v.into());
        Ok(())
    }
    fn serialize_u32(mut self, v: u32) -> Result {
        self.int(v.into());
        Ok(())
    }
    fn serialize_u64(mut self, v: u64) -> Result {
        self.int(v.into());
        Ok(())
    }
    fn serialize_u128(mut self, v: u128) -> Result {
        self.uint(v);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result {
        self.float(v, json::encode_f32)
    }
    fn serialize_f64(self, v: f64) -> Result {
        self.float(v, json::encode_f64)
    }
    fn serialize_char(self, v: char) -> Result {
        self.out.push(tag::CHAR);
        varint(self.out, u32::from(v).into());
        Ok(())
    }
    fn serialize_str(mut self, v: &str) -> Result {
        self.bytes(tag::STR, v.as_bytes());
        Ok(())
    }
    fn serialize_bytes(mut self, v: &[u8]) -> Result {
        self.bytes(tag::BYTES, v);
        Ok(())
    }
    fn serialize_none(self) -> Result {
        self.out.push(tag::NONE);
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result {
        self.out.push(tag::SOME);
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result {
        self.out.push(tag::UNIT);
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result {
        self.serialize_unit()
    }
    fn serialize_unit_variant(mut self, _: &'static str, _: u32, variant: &'static str) -> Result {
        self.variant(variant);
        self.out.push(tag::UNIT);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result {
        if name != json::NUMBER_TOKEN {
            return value.serialize(self);
        }
        // A `json::Number` around its canonical text: encoded as the string, then retagged.
        let start = self.out.len();
        value.serialize(Encoder { out: self.out })?;
        match self.out.get_mut(start) {
            Some(first) if *first == tag::STR => {
                *first = tag::DECIMAL;
                Ok(())
            }
            _ => Err(ser::Error::custom("a number must serialize as its text")),
        }
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        mut self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result {
        self.variant(variant);
        value.serialize(self)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Seq<'a>> {
        self.out.push(tag::SEQ);
        Ok(Seq { out: self.out })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'a>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq<'a>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        mut self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Seq<'a>> {
        self.variant(variant);
        self.serialize_seq(Some(len))
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Map<'a>> {
        // A count known up front is written at once: entries that then come sorted need no
        // moving at all.
        let header_start = self.out.len();
        let announced = len.inspect(|&len| map_header(self.out, len));
        Ok(Map {
            header_start,
            start: self.out.len(),
            out: self.out,
            announced,
            entries: Vec::with_capacity(len.unwrap_or(0)),
            pending_key: None,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Map<'a>> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        mut self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Map<'a>> {
        self.variant(variant);
        self.serialize_map(Some(len))
    }
}

/// Sequences keep their order: elements are written one after another, then an end tag.
struct Seq<'a> {
    out: &'a mut Vec<u8>,
}

impl Seq<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        value.serialize(Encoder { out: self.out })
    }
    fn end(self) -> Result {
        self.out.push(tag::SEQ_END);
        Ok(())
    }
}

/// Every sequence-like serde trait on [`Seq`]: each element in order, then the end tag.
macro_rules! seq_impls {
    ($($trait:ident :: $method:ident),* $(,)?) => {$(
        impl ser::$trait for Seq<'_> {
            type Ok = ();
            type Error = EncodeError;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
                self.element(value)
            }
            fn end(self) -> Result {
                Seq::end(self)
            }
        }
    )*};
}

seq_impls!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

/// Maps and structs: entries are encoded at the end of the output in the order they come, then
/// put in order of encoded key (then value, for determinism even with duplicate keys) where
/// they are: through a copy on the stack for a small map, through the output's spare capacity
/// for a larger one. Nested maps do the same further along the output.
struct Map<'a> {
    out: &'a mut Vec<u8>,
    /// Where this map's encoding starts in `out`: its header, when its count was announced.
    header_start: usize,
    /// Where its entries start.
    start: usize,
    /// The count already written before `start`, if it was known.
    announced: Option<usize>,
    /// Per entry: where its key starts, where its value starts, where it ends in `out`.
    entries: Vec<(usize, usize, usize)>,
    pending_key: Option<usize>,
}

impl Map<'_> {
    fn encode<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<usize> {
        let start = self.out.len();
        value.serialize(Encoder { out: self.out })?;
        Ok(start)
    }

    fn entry<K: Serialize + ?Sized, V: Serialize + ?Sized>(
        &mut self,
        key: &K,
        value: &V,
    ) -> Result {
        let key_start = self.encode(key)?;
        let value_start = self.encode(value)?;
        self.entries.push((key_start, value_start, self.out.len()));
        Ok(())
    }

    fn end(mut self) -> Result {
        let out = &mut *self.out;
        let count = self.entries.len();
        // A `Serialize` impl may announce another count than it gives: that header is redone.
        let header_kept = self.announced == Some(count);
        let sorted = self
            .entries
            .windows(2)
            .all(|pair| entry_order(out, &pair[0], &pair[1]).is_le());
        if sorted && header_kept {
            return Ok(());
        }
        self.entries.sort_unstable_by(|a, b| entry_order(out, a, b));
        let rewrite_from = if header_kept {
            self.start
        } else {
            self.header_start
        };
        let unsorted = self.start..out.len();
        if unsorted.len() <= STACK_COPY {
            // A small map's entries are copied aside on the stack and written back in order.
            let mut aside = [0u8; STACK_COPY];
            aside[..unsorted.len()].copy_from_slice(&out[unsorted]);
            out.truncate(rewrite_from);
            if !header_kept {
                map_header(out, count);
            }
            for &(start, _, end) in &self.entries {
                out.extend_from_slice(&aside[start - self.start..end - self.start]);
            }
        } else {
            // Written again after themselves, in order, then moved back over the unsorted.
            let unsorted_end = out.len();
            if !header_kept {
                map_header(out, count);
            }
            for &(start, _, end) in &self.entries {
                out.extend_from_within(start..end);
            }
            out.copy_within(unsorted_end.., rewrite_from);
            out.truncate(rewrite_from + (out.len() - unsorted_end));
        }
        Ok(())
    }
}

/// Appends a map's header: its tag and entry count.
fn map_header(out: &mut Vec<u8>, count: usize) {
    out.push(tag::MAP);
    varint(out, count as u128);
}

/// The largest map, in encoded bytes, whose entries are sorted through a copy on the stack.
const STACK_COPY: usize = 512;

/// Entries in `bytes` by encoded key, then value.
fn entry_order(
    bytes: &[u8],
    a: &(usize, usize, usize),
    b: &(usize, usize, usize),
) -> std::cmp::Ordering {
    (&bytes[a.0..a.1], &bytes[a.1..a.2]).cmp(&(&bytes[b.0..b.1], &bytes[b.1..b.2]))
}

impl ser::SerializeMap for Map<'_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result {
        self.pending_key = Some(self.encode(key)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        let key_start = self
            .pending_key
            .take()
            .ok_or_else(|| <EncodeError as ser::Error>::custom("map value without a key"))?;
        let value_start = self.encode(value)?;
        self.entries.push((key_start, value_start, self.out.len()));
        Ok(())
    }
    fn serialize_entry<K: Serialize + ?Sized, V: Serialize + ?Sized>(
        &mut self,
        key: &K,
        value: &V,
    ) -> Result {
        self.entry(key, value)
    }
    fn end(self) -> Result {
        Map::end(self)
    }
}

impl ser::SerializeStruct for Map<'_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result {
        self.entry(key, value)
    }
    fn end(self) -> Result {
        Map::end(self)
    }
}

impl ser::SerializeStructVariant for Map<'_> {
    type Ok = ();
    type Error = EncodeError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result {
        self.entry(key, value)
    }
    fn end(self) -> Result {
        Map::end(self)
    }
}
