//! `dynamodb://TABLE?region=...&sort_key=...`: the DynamoDB options a store URL carries, so
//! that one `IDEM_STORE` says everything; an option given on the command line wins. And the
//! sort key those options describe.

use idem_stores::dynamodb::SortKey;

use crate::args::StoreArgs;
use crate::failure::Failure;

/// The query parameters a DynamoDB store URL takes, each the option of the same name.
const PARAMETERS: &str = "region, endpoint, prefix, sort_key, partition_value, sort_value, \
                          attribute.FIELD (as --attribute FIELD=NAME)";

/// `args` with what the URL's `query` says filled in where the command line says nothing;
/// its `attribute.FIELD=NAME` pairs come before the command line's, which therefore win.
pub(crate) fn with_url_options(args: &StoreArgs, query: &str) -> Result<StoreArgs, Failure> {
    let mut merged = args.clone();
    // Where the keys go is one choice: a flag that makes it overrides the URL's.
    let flag_places_keys = args.partition_value.is_some() || args.sort_value.is_some();
    let mut attributes = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if !seen.insert(name) {
            return Err(Failure::usage(format!(
                "`{name}` is given twice in the store URL"
            )));
        }
        let value = percent_decoded(value)
            .ok_or_else(|| Failure::usage(format!("`{name}` in the store URL is not UTF-8")))?;
        if value.is_empty() {
            return Err(Failure::usage(format!(
                "`{name}` in the store URL has no value"
            )));
        }
        if value.chars().any(char::is_control) {
            return Err(Failure::usage(format!(
                "`{name}` in the store URL holds a control character"
            )));
        }
        if flag_places_keys && matches!(name, "partition_value" | "sort_value") {
            continue;
        }
        let slot = match name {
            "region" => &mut merged.region,
            "endpoint" => &mut merged.endpoint,
            "prefix" => &mut merged.prefix,
            "sort_key" => &mut merged.sort_key,
            "partition_value" => &mut merged.partition_value,
            "sort_value" => &mut merged.sort_value,
            _ => match name.strip_prefix("attribute.") {
                Some(field) => {
                    let pair = crate::attribute_names::parse(&format!("{field}={value}")).map_err(
                        |why| Failure::usage(format!("`{name}` in the store URL: {why}")),
                    )?;
                    attributes.push(pair);
                    continue;
                }
                None => {
                    return Err(Failure::usage(format!(
                        "`{name}` is no option of a DynamoDB store URL; the options: {PARAMETERS}"
                    )))
                }
            },
        };
        if slot.is_none() {
            *slot = Some(value);
        }
    }
    attributes.append(&mut merged.attributes);
    merged.attributes = attributes;
    Ok(merged)
}

/// The sort key `--sort-key` with `--partition-value` or `--sort-value` make, if any.
pub(crate) fn sort_key(args: &StoreArgs) -> Result<Option<SortKey>, Failure> {
    let Some(attribute) = &args.sort_key else {
        if args.partition_value.is_some() || args.sort_value.is_some() {
            return Err(Failure::usage(
                "--partition-value and --sort-value go with --sort-key NAME, the table's sort \
                 key",
            ));
        }
        return Ok(None);
    };
    match (&args.partition_value, &args.sort_value) {
        (Some(partition), None) => Ok(Some(SortKey::holding_key(attribute, partition))),
        (None, Some(sort)) => Ok(Some(SortKey::fixed(attribute, sort))),
        (Some(_), Some(_)) => Err(Failure::usage(
            "--partition-value and --sort-value say where the records' keys go, so only one \
             of them is given: --partition-value when the sort key holds the keys, \
             --sort-value when the partition key does",
        )),
        (None, None) => Err(Failure::usage(format!(
            "--sort-key {attribute} needs the value every record has in the other half of the \
             key: --partition-value VALUE when the sort key holds the records' keys \
             (Powertools' static_pk_value), or --sort-value VALUE when the partition key does"
        ))),
    }
}

/// `text` with its `%XX` escapes decoded (`%23` for the `#` of `idempotency#payments`), or
/// `None` when that is not UTF-8. A `%` without two hex digits is kept as it is.
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let escaped = bytes
            .get(at + 1..at + 3)
            .filter(|_| bytes[at] == b'%')
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                decoded.push(byte);
                at += 3;
            }
            None => {
                decoded.push(bytes[at]);
                at += 1;
            }
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::args::Cli;

    fn args(line: &[&str]) -> StoreArgs {
        let mut words = vec!["idem"];
        words.extend(line);
        words.push("list");
        Cli::try_parse_from(words).unwrap().store
    }

    #[test]
    fn the_url_fills_what_the_command_line_leaves_out() {
        let merged = with_url_options(
            &args(&["--region", "eu-west-1", "--attribute", "ttl=exp"]),
            "region=us-east-1&endpoint=http://127.0.0.1:8000&sort_key=sk\
             &partition_value=idempotency%23payments&attribute.key=id&attribute.ttl=expiration",
        )
        .unwrap();
        assert_eq!(merged.region.as_deref(), Some("eu-west-1"), "the flag wins");
        assert_eq!(merged.endpoint.as_deref(), Some("http://127.0.0.1:8000"));
        assert_eq!(merged.sort_key.as_deref(), Some("sk"));
        assert_eq!(
            merged.partition_value.as_deref(),
            Some("idempotency#payments")
        );
        let names = crate::attribute_names::names(&merged.attributes).unwrap();
        assert_eq!(names.key, "id");
        assert_eq!(names.ttl, "exp", "the flag wins");
    }

    #[test]
    fn unknown_empty_and_conflicting_options_are_refused() {
        let refused = |query: &str| with_url_options(&args(&[]), query).unwrap_err().to_string();
        assert!(refused("table=x").contains("sort_key"));
        assert!(refused("region=").contains("no value"));
        assert!(refused("attribute.partition=id").contains("no attribute field"));
        assert!(refused("region=a&region=b").contains("twice"));
        assert!(refused("prefix=a%00b").contains("control character"));
        let flagged = with_url_options(
            &args(&["--partition-value", "flag"]),
            "sort_key=sk&sort_value=url",
        )
        .unwrap();
        assert_eq!(flagged.partition_value.as_deref(), Some("flag"));
        assert_eq!(
            flagged.sort_value, None,
            "the flag's choice wins over the URL's"
        );
        assert_eq!(flagged.sort_key.as_deref(), Some("sk"));
        assert_eq!(percent_decoded("a%2"), Some("a%2".into()));
        assert_eq!(percent_decoded("%ff"), None);
    }
}
