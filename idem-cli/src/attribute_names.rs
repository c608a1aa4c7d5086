//! `--attribute FIELD=NAME`: the DynamoDB attribute names a service sets otherwise than the
//! default (`AttributeNames`), as the command line and the store URL give them.

use idem_stores::dynamodb::AttributeNames;

use crate::failure::Failure;

/// The attribute name of one field of `AttributeNames`, to read or set.
type Slot = fn(&mut AttributeNames) -> &mut String;

/// The fields `--attribute` sets, as `AttributeNames` names them, with a way to set each.
const FIELDS: &[(&str, Slot)] = &[
    ("key", |names| &mut names.key),
    ("state", |names| &mut names.state),
    ("owner", |names| &mut names.owner),
    ("fingerprint", |names| &mut names.fingerprint),
    ("live_until", |names| &mut names.live_until),
    ("fencing_token", |names| &mut names.fencing_token),
    ("attempt", |names| &mut names.attempt),
    ("ttl", |names| &mut names.ttl),
    ("outcome", |names| &mut names.outcome),
    ("body", |names| &mut names.body),
    ("steps", |names| &mut names.steps),
    ("steps_kept_until", |names| &mut names.steps_kept_until),
    ("steps_ttl", |names| &mut names.steps_ttl),
];

/// `--attribute`'s value, `FIELD=NAME`, as clap parses it.
pub(crate) fn parse(text: &str) -> Result<(String, String), String> {
    let (field, name) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not FIELD=NAME (say key=id)"))?;
    if !FIELDS.iter().any(|(known, _)| *known == field) {
        return Err(format!(
            "`{field}` is no attribute field; the fields: {}",
            field_list()
        ));
    }
    if name.is_empty() {
        return Err(format!("`{text}` names no attribute"));
    }
    Ok((field.to_owned(), name.to_owned()))
}

/// The attribute names the defaults and `pairs` (from `--attribute`) make.
pub(crate) fn names(pairs: &[(String, String)]) -> Result<AttributeNames, Failure> {
    let mut names = AttributeNames::default();
    for (field, name) in pairs {
        let (_, slot) = FIELDS
            .iter()
            .find(|(known, _)| known == field)
            .ok_or_else(|| Failure::usage(format!("`{field}` is no attribute field")))?;
        *slot(&mut names) = name.clone();
    }
    Ok(names)
}

/// The attribute name `names` give `field` (one of [`FIELDS`]).
pub(crate) fn name_of(names: &AttributeNames, field: &str) -> String {
    let mut names = names.clone();
    FIELDS
        .iter()
        .find(|(known, _)| *known == field)
        .map(|(_, slot)| slot(&mut names).clone())
        .unwrap_or_default()
}

/// The fields, as `AttributeNames` names them.
pub(crate) fn fields() -> impl Iterator<Item = &'static str> {
    FIELDS.iter().map(|(field, _)| *field)
}

/// The fields, comma-separated.
pub(crate) fn field_list() -> String {
    fields().collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_read_as_field_equals_name() {
        let pairs = vec![
            parse("key=id").unwrap(),
            parse("ttl=expiration").unwrap(),
            parse("live_until=in_progress_expiration").unwrap(),
        ];
        let names = names(&pairs).unwrap();
        assert_eq!(names.key, "id");
        assert_eq!(names.ttl, "expiration");
        assert_eq!(names.live_until, "in_progress_expiration");
        assert_eq!(names.state, AttributeNames::default().state);
        assert!(parse("id").is_err());
        assert!(parse("partition=id").unwrap_err().contains("steps_ttl"));
        assert!(parse("key=").is_err());
    }
}
