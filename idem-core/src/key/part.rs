//! `KeyPart`: what may be one operand of a key expression, and how each such type writes its
//! text.

use std::borrow::Cow;
use std::fmt;
use std::num::{
    NonZeroI128, NonZeroI16, NonZeroI32, NonZeroI64, NonZeroI8, NonZeroIsize, NonZeroU128,
    NonZeroU16, NonZeroU32, NonZeroU64, NonZeroU8, NonZeroUsize,
};
use std::rc::Rc;
use std::sync::Arc;

/// A value that can be one operand of a key expression.
///
/// Implemented for strings, integers (`NonZero` ones too), `bool`, `char`, `uuid::Uuid`
/// (hyphenated lower case), `Option`s of these (`None` is refused: a call without the value
/// cannot be told apart from another), and references and smart pointers to them. A type with
/// a `Display` form of its own can be keyed by it with `display(..)` in the key expression
/// (`key = "display(req.at)"`). Implement it for your own identifier types by writing their
/// canonical text form:
///
/// ```
/// use std::fmt;
/// struct OrderId(u64);
/// impl idem_core::KeyPart for OrderId {
///     fn write_key_part(&self, out: &mut dyn fmt::Write) -> fmt::Result {
///         write!(out, "order-{}", self.0)
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be part of an idempotency key",
    label = "this key operand has type `{Self}`",
    note = "key operands are strings, integers, `bool`, `char`, `uuid::Uuid`, and `Option`s, references and `Box`/`Rc`/`Arc` of those",
    note = "key by a field of this value (`key = \"req.id\"`), by its `Display` text (`key = \"display(req.id)\"`), or implement `idem_core::KeyPart` if `{Self}` is your own type"
)]
pub trait KeyPart {
    /// Writes the part's text. Escaping is done by the caller.
    fn write_key_part(&self, out: &mut dyn fmt::Write) -> fmt::Result;
}

impl KeyPart for str {
    fn write_key_part(&self, out: &mut dyn fmt::Write) -> fmt::Result {
        out.write_str(self)
    }
}

impl KeyPart for String {
    fn write_key_part(&self, out: &mut dyn fmt::Write) -> fmt::Result {
        out.write_str(self)
    }
}

impl KeyPart for Cow<'_, str> {
    fn write_key_part(&self, out: &mut dyn fmt::Write) -> fmt::Result {
        out.write_str(self)
    }
}

impl<T: KeyPart + ?Sized> KeyPart for &T {
    fn write_key_part(&self, out: &mut dyn fmt::Write) -> fmt::Result {
        (**self).write_key_part(out)
    }
}

impl<T: KeyPart + ?Sized> KeyPart for &mut T {
    fn write_key_part(&self, out: &mut dyn fmt::Write) -> fmt::Result {
        (**self).write_key_part(out)
    }
}

impl<T: KeyPart + ?Sized> KeyPart for Box<T> {
    fn write_key_part(&self, out: &mut dyn fmt::Write) -> fmt::Result {
        (**self).write_key_part(out)
    }
}

impl<T: KeyPart + ?Sized> KeyPart for Arc<T> {
    fn write_key_part(&self, out: &mut dyn fmt::Write) -> fmt::Result {
        (**self).write_key_part(out)
    }
}

impl<T: KeyPart + ?Sized> KeyPart for Rc<T> {
    fn write_key_part(&self, out: &mut dyn fmt::Write) -> fmt::Result {
        (**self).write_key_part(out)
    }
}

/// `Some(value)` writes what `value` writes, so a field that becomes optional keeps its keys;
/// `None` is refused.
impl<T: KeyPart> KeyPart for Option<T> {
    fn write_key_part(&self, out: &mut dyn fmt::Write) -> fmt::Result {
        match self {
            Some(value) => value.write_key_part(out),
            None => Err(fmt::Error),
        }
    }
}

impl KeyPart for uuid::Uuid {
    fn write_key_part(&self, out: &mut dyn fmt::Write) -> fmt::Result {
        write!(out, "{}", self.hyphenated())
    }
}

macro_rules! display_key_parts {
    ($($ty:ty),*) => {$(
        impl KeyPart for $ty {
            fn write_key_part(&self, out: &mut dyn fmt::Write) -> fmt::Result {
                write!(out, "{self}")
            }
        }
    )*};
}

display_key_parts!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, bool, char);
display_key_parts!(
    NonZeroU8,
    NonZeroU16,
    NonZeroU32,
    NonZeroU64,
    NonZeroU128,
    NonZeroUsize,
    NonZeroI8,
    NonZeroI16,
    NonZeroI32,
    NonZeroI64,
    NonZeroI128,
    NonZeroIsize
);
