//! The key and fingerprint an event's data gives a call.

use std::any::Any;

use idem_core::json::Number;
use idem_core::{Fingerprint, Idempotency, Key, KeyBuilder};
use serde::Serialize;
use serde_json::Value;

use crate::expression::EventData;
use crate::scoping::Scope;
use crate::{Error, EventPath, ExpressionError};

/// Strings up to this many bytes are key parts as they are; longer ones by their digest.
const MAX_CLEAR_PART: usize = 256;

/// What picks an idempotency key, and the data a retry must repeat, out of an event.
#[derive(Clone, Debug)]
pub(crate) struct Selector {
    pub(crate) key: EventPath,
    pub(crate) validation: Option<EventPath>,
    /// Whether a key that lost a part of the event on the way ([`tracked`](crate::tracked):
    /// a multi-select with a part `null`, however it is then flattened, filtered or turned
    /// into text) is taken (Powertools' way), or counts as missing.
    pub(crate) partial_keys: bool,
}

/// The key and fingerprint of one event.
pub(crate) struct Selected {
    pub(crate) key: Key,
    pub(crate) fingerprint: Fingerprint,
}

/// Why an event gave no key.
#[derive(Debug)]
pub(crate) enum Unselected {
    /// The key expression selected `null`, or nothing.
    Missing,
    /// The expression failed over the event.
    Expression(ExpressionError),
    /// The key or the fingerprint could not be built.
    Idem(idem_core::Error),
    /// A keyed HTTP event without a principal, and the handler refuses those.
    Unscoped,
}

impl Unselected {
    /// The handler's error for an event that gave no key.
    pub(crate) fn into_error<E>(self, selector: &Selector) -> Error<E> {
        match self {
            Unselected::Missing => Error::KeyMissing {
                expression: selector.key.as_str().to_owned(),
            },
            Unselected::Expression(error) => Error::Expression(error),
            Unselected::Idem(error) => Error::Idempotency(error),
            Unselected::Unscoped => Error::Unscoped {
                expression: selector.key.as_str().to_owned(),
            },
        }
    }
}

impl Selector {
    /// The key under `name` and the fingerprint of `event`: the key's data, and the
    /// validation expression's result when there is one, so that the same data in another
    /// envelope (another request id, another timestamp) is the same call. Numbers count by
    /// [`idem_core::json`]'s rule, in the key as in the fingerprint: `100` and `100.0` are one.
    /// The key is stored under the scope `scope` finds for the event; an event refused a
    /// scope is refused once it has a key.
    pub(crate) fn select<T: Serialize + Any>(
        &self,
        idem: &Idempotency,
        name: &str,
        event: &T,
        scope: impl FnOnce(&EventData) -> Scope,
    ) -> Result<Selected, Unselected> {
        // An event Lambda gave as JSON is read as it is, not written out and parsed again.
        let event = match (event as &dyn Any).downcast_ref::<Value>() {
            Some(json) => EventData::of_json(json),
            None => EventData::of(event),
        };
        let mut event = event.map_err(|message| {
            Unselected::Expression(ExpressionError {
                expression: self.key.as_str().to_owned(),
                message,
            })
        })?;
        // The principal is read from the event as it came, before its headers are matched.
        let scope = scope(&event);
        event
            .match_headers(&self.key)
            .map_err(Unselected::Expression)?;
        if let Some(path) = &self.validation {
            event.match_headers(path).map_err(Unselected::Expression)?;
        }
        let (data, lost_a_part) = self
            .key
            .select_parts_in(&event)
            .map_err(Unselected::Expression)?;
        if is_missing(&data) || (!self.partial_keys && lost_a_part) {
            return Err(Unselected::Missing);
        }
        inexact_number(&self.key, &data)?;
        let validated = match &self.validation {
            Some(path) => {
                let validated = path.select_in(&event).map_err(Unselected::Expression)?;
                inexact_number(path, &validated)?;
                Some(validated)
            }
            None => None,
        };
        let Scope::Of(scope) = scope else {
            return Err(Unselected::Unscoped);
        };
        let key = key_parts(idem.key(name).scope(scope.as_deref()), &data)
            .and_then(KeyBuilder::finish)
            .map_err(Unselected::Idem)?;
        let fingerprint = Fingerprint::of(&(&data, &validated)).map_err(Unselected::Idem)?;
        Ok(Selected { key, fingerprint })
    }
}

/// Refuses data holding a number that JSON parsing may have rounded: an integer beyond 64
/// bits becomes the nearest double, so two different order numbers could share a key, or a
/// changed amount pass validation.
fn inexact_number(path: &EventPath, data: &Value) -> Result<(), Unselected> {
    let inexact = match data {
        Value::Number(number) => number.as_f64().is_some_and(|float| {
            !number.is_i64() && !number.is_u64() && float.abs() > idem_core::json::EXACT_IN_F64
        }),
        Value::Array(items) => return items.iter().try_for_each(|item| inexact_number(path, item)),
        Value::Object(fields) => {
            return fields
                .values()
                .try_for_each(|field| inexact_number(path, field))
        }
        _ => false,
    };
    if inexact {
        return Err(Unselected::Expression(ExpressionError {
            expression: path.as_str().to_owned(),
            message: format!(
                "selected the number {data}, too large to compare exactly; send it as a string"
            ),
        }));
    }
    Ok(())
}

/// `null`, an empty string, or a list or object of nothing but nulls: Powertools takes each
/// as no key. An empty string would otherwise be one key shared by every event without one.
fn is_missing(data: &Value) -> bool {
    match data {
        Value::Null => true,
        Value::String(text) => text.is_empty(),
        Value::Array(items) => items.iter().all(Value::is_null),
        Value::Object(fields) => fields.values().all(Value::is_null),
        _ => false,
    }
}

/// The part that starts the key of a list written out element by element, where a string is
/// one part and a number, a boolean or a digest two (`#number`, `#bool`, `#sha256` and the
/// value): a key holds the parts of exactly one of these shapes, so no two collide.
const LIST: &str = "#list";

/// A string is its own key part, readable by `idem get`; any other value takes two parts, its
/// type and its text or digest, so that `"42"` and `42` are different keys. A number's text is
/// its canonical one, so that `42` and `42.0` are one key. A list of scalars short enough
/// ([`list_parts`]) is [`LIST`] and a part for each element, readable by `idem list`; a longer
/// or nested list, and an object, take their digest: the SHA-256 of idem-core's canonical
/// encoding of the value ([`Fingerprint::of`]), in hex.
fn key_parts(key: KeyBuilder, data: &Value) -> Result<KeyBuilder, idem_core::Error> {
    Ok(match data {
        Value::String(text) if text.len() <= MAX_CLEAR_PART => key.part(text.as_str()),
        Value::Number(number) => key.part("#number").part(&Number::from(number).to_string()),
        Value::Bool(flag) => key.part("#bool").part(&flag.to_string()),
        Value::Array(items) => match list_parts(items) {
            Some(parts) => parts
                .iter()
                .fold(key.part(LIST), |key, part| key.part(part.as_str())),
            None => key.part("#sha256").part(&Fingerprint::of(data)?.to_hex()),
        },
        other => key.part("#sha256").part(&Fingerprint::of(other)?.to_hex()),
    })
}

/// One key part per element of `items`, when each is a scalar and their texts come to at
/// most [`MAX_CLEAR_PART`] bytes in all; `None` otherwise.
fn list_parts(items: &[Value]) -> Option<Vec<String>> {
    let mut total = 0;
    items
        .iter()
        .map(|item| {
            let part = element_part(item)?;
            total += part.len();
            (total <= MAX_CLEAR_PART).then_some(part)
        })
        .collect()
}

/// The key part of one element of a list, or `None` for a list or an object. A string is its
/// text, with one more `#` in front when it starts with `#`; any other scalar starts with a
/// single `#` and its type: `#number:42`, `#bool:true`, `#null` (a missing part of a
/// [partial key](crate::IdempotentHandlerBuilder::allow_partial_keys)). So `"#null"` (written
/// `##null`) and `null` never share a part, nor `"42"` and `42`.
fn element_part(item: &Value) -> Option<String> {
    Some(match item {
        Value::String(text) if text.starts_with('#') => format!("#{text}"),
        Value::String(text) => text.clone(),
        Value::Number(number) => format!("#number:{}", Number::from(number)),
        Value::Bool(flag) => format!("#bool:{flag}"),
        Value::Null => "#null".to_owned(),
        Value::Array(_) | Value::Object(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(data: Value) -> String {
        key_parts(KeyBuilder::new("idem", "orders"), &data)
            .and_then(KeyBuilder::finish)
            .unwrap()
            .as_str()
            .to_owned()
    }

    #[test]
    fn a_short_list_of_scalars_is_its_parts_as_text() {
        assert_eq!(
            key(json!(["user-7", "o-42"])),
            "idem|orders|-|#list|user-7|o-42"
        );
        assert_eq!(
            key(json!(["a|b", 42, 42.0, true, null, "#x"])),
            "idem|orders|-|#list|a%7Cb|#number:42|#number:42|#bool:true|#null|##x"
        );
    }

    #[test]
    fn no_two_shapes_share_a_key() {
        let shapes = [
            json!(["ab", "c"]),
            json!(["a", "bc"]),
            json!(["a|b"]),
            json!(["a", "b"]),
            json!("#list"),
            json!(["#list"]),
            json!([42]),
            json!(["42"]),
            json!(["#number:42"]),
            json!([null]),
            json!(["#null"]),
            json!([true]),
            json!(["#bool:true"]),
            json!(42),
            json!("42"),
            json!(["#number", "42"]),
            json!(true),
            json!([["a"]]),
            json!({"a": "b"}),
        ];
        let keys: std::collections::BTreeSet<String> =
            shapes.iter().map(|shape| key(shape.clone())).collect();
        assert_eq!(keys.len(), shapes.len(), "{keys:#?}");
    }

    #[test]
    fn a_long_or_nested_list_and_an_object_are_digested() {
        let long = json!(["a".repeat(200), "b".repeat(57)]);
        assert!(key(long.clone()).starts_with("idem|orders|-|#sha256|"));
        let fits = json!(["a".repeat(200), "b".repeat(56)]);
        assert!(key(fits).starts_with("idem|orders|-|#list|aaa"));
        let digest = Fingerprint::of(&long).unwrap().to_hex();
        assert_eq!(key(long), format!("idem|orders|-|#sha256|{digest}"));
        assert!(key(json!([["a"], "b"])).contains("|#sha256|"));
        assert!(key(json!({"customer": "c-1"})).contains("|#sha256|"));
    }
}
