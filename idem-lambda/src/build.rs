//! Builds the JMESPath value of a JSON text within a budget of memory, leaving out what the
//! expression will not read: `powertools_json(body).order_id` builds the body's `order_id`
//! alone, and a body that would take more than the budget is refused, not built.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::mem::size_of;

use jmespath::{Rcvar, Variable};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Number;

/// A value: the variable and its reference counts.
const NODE_BYTES: usize = size_of::<Variable>() + 2 * size_of::<usize>();
/// A list's slot, three times over: a list grows by doubling, and while it moves the old
/// and the new one are both held.
const SLOT_BYTES: usize = 3 * size_of::<Rcvar>();
/// An object's first B-tree node, held for its first field.
const OBJECT_BYTES: usize = 11 * (size_of::<String>() + size_of::<Rcvar>()) + 16;
/// A field of an object beyond its name's text: a B-tree node is at least half full.
const FIELD_BYTES: usize = 2 * (size_of::<String>() + size_of::<Rcvar>());

/// Why a text was not built.
pub(crate) enum Unbuilt {
    /// It would take more than the budget left.
    OverBudget,
    /// It is not JSON.
    NotJson(String),
}

/// The value of `text`, taking from `left` the bytes it holds; with `fields`, an object's
/// other fields and a list's elements are left out, as an expression that reads only those
/// fields of it finds nothing else.
pub(crate) fn build(
    text: &str,
    fields: Option<&BTreeSet<String>>,
    left: &Cell<usize>,
) -> Result<Rcvar, Unbuilt> {
    let budget = Budget {
        left,
        over: Cell::new(false),
        shared: Shared::new(),
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let seed = Seed {
        budget: &budget,
        fields,
    };
    let built = seed
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    match built {
        Ok(value) => Ok(value),
        Err(_) if budget.over.get() => Err(Unbuilt::OverBudget),
        Err(error) => Err(Unbuilt::NotJson(error.to_string())),
    }
}

struct Budget<'a> {
    left: &'a Cell<usize>,
    over: Cell<bool>,
    shared: Shared,
}

impl Budget<'_> {
    fn take<E: de::Error>(&self, bytes: usize) -> Result<(), E> {
        match self.left.get().checked_sub(bytes) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => {
                self.over.set(true);
                Err(E::custom("over the budget"))
            }
        }
    }
}

/// Values many texts repeat, held once: `[0,0,0]` is three slots, not three values.
struct Shared {
    null: Rcvar,
    booleans: [Rcvar; 2],
    small: Vec<Rcvar>,
    empty_list: Rcvar,
    empty_object: Rcvar,
}

impl Shared {
    fn new() -> Shared {
        Shared {
            null: Rcvar::new(Variable::Null),
            booleans: [false, true].map(|flag| Rcvar::new(Variable::Bool(flag))),
            small: (0..16u64)
                .map(|n| Rcvar::new(Variable::Number(n.into())))
                .collect(),
            empty_list: Rcvar::new(Variable::Array(Vec::new())),
            empty_object: Rcvar::new(Variable::Object(BTreeMap::new())),
        }
    }
}

struct Seed<'a> {
    budget: &'a Budget<'a>,
    fields: Option<&'a BTreeSet<String>>,
}

impl<'a> Seed<'a> {
    fn whole(&self) -> Seed<'a> {
        Seed {
            budget: self.budget,
            fields: None,
        }
    }

    fn number<E: de::Error>(&self, number: Number) -> Result<Rcvar, E> {
        if let Some(small) = number
            .as_u64()
            .and_then(|n| self.budget.shared.small.get(n as usize))
        {
            return Ok(small.clone());
        }
        self.budget.take(NODE_BYTES)?;
        Ok(Rcvar::new(Variable::Number(number)))
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Rcvar;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Rcvar, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Rcvar;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, flag: bool) -> Result<Rcvar, E> {
        Ok(self.budget.shared.booleans[usize::from(flag)].clone())
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Rcvar, E> {
        self.number(n.into())
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Rcvar, E> {
        self.number(n.into())
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Rcvar, E> {
        match Number::from_f64(n) {
            Some(number) => self.number(number),
            None => Ok(self.budget.shared.null.clone()),
        }
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Rcvar, E> {
        self.budget.take(NODE_BYTES + text.len())?;
        Ok(Rcvar::new(Variable::String(text.to_owned())))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Rcvar, E> {
        Ok(self.budget.shared.null.clone())
    }

    fn visit_none<E: de::Error>(self) -> Result<Rcvar, E> {
        Ok(self.budget.shared.null.clone())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Rcvar, A::Error> {
        if self.fields.is_some() {
            // Only fields are read of it: a list has none.
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(self.budget.shared.empty_list.clone());
        }
        let mut elements = Vec::new();
        while let Some(element) = seq.next_element_seed(self.whole())? {
            self.budget.take(SLOT_BYTES)?;
            elements.push(element);
        }
        if elements.is_empty() {
            return Ok(self.budget.shared.empty_list.clone());
        }
        self.budget.take(NODE_BYTES)?;
        Ok(Rcvar::new(Variable::Array(elements)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Rcvar, A::Error> {
        let mut fields = BTreeMap::new();
        while let Some(name) = map.next_key::<String>()? {
            if self.fields.is_some_and(|read| !read.contains(&name)) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let value = map.next_value_seed(self.whole())?;
            let first = if fields.is_empty() { OBJECT_BYTES } else { 0 };
            self.budget.take(first + FIELD_BYTES + name.len())?;
            fields.insert(name, value);
        }
        if fields.is_empty() {
            return Ok(self.budget.shared.empty_object.clone());
        }
        self.budget.take(NODE_BYTES)?;
        Ok(Rcvar::new(Variable::Object(fields)))
    }
}
