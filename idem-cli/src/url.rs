//! Store URLs: which store, and where.

use crate::failure::Failure;
use crate::redact::redacted;

/// The schemes `--store` accepts, for error messages.
const SCHEMES: &str = "`redis://`, `rediss://`, `redis+cluster://host:port,host:port`, \
                       `rediss+cluster://...`, `postgres://`, `postgresql://`, `dynamodb://TABLE`";

/// A store named by `--store`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StoreUrl {
    /// One Redis server: the URL as given (`redis://` or `rediss://`).
    Redis(String),
    /// A Redis Cluster: one URL per node given.
    RedisCluster(Vec<String>),
    /// PostgreSQL: the URL as given.
    Postgres(String),
    /// DynamoDB: the table's name, and the URL's query (options, as
    /// `dynamodb_url` reads them).
    DynamoDb(String, String),
}

impl StoreUrl {
    /// Reads `text`; a usage [`Failure`] that lists the valid forms otherwise.
    pub(crate) fn parse(text: &str) -> Result<Self, Failure> {
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err(Failure::usage(format!(
                "`{}` is not a store URL: use one of {SCHEMES}",
                redacted(text)
            )));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "redis" | "rediss" => Ok(StoreUrl::Redis(text.to_owned())),
            "redis+cluster" => cluster_nodes("redis", rest).map(StoreUrl::RedisCluster),
            "rediss+cluster" => cluster_nodes("rediss", rest).map(StoreUrl::RedisCluster),
            "postgres" | "postgresql" => Ok(StoreUrl::Postgres(text.to_owned())),
            "dynamodb" => {
                let (table, query) = rest.split_once('?').unwrap_or((rest, ""));
                Ok(StoreUrl::DynamoDb(table_name(table)?, query.to_owned()))
            }
            _ => Err(Failure::usage(format!(
                "unknown store scheme `{}://`: use one of {SCHEMES}",
                redacted(scheme)
            ))),
        }
    }

    /// The store's kind, as `idem` names it in messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            StoreUrl::Redis(_) => "redis",
            StoreUrl::RedisCluster(_) => "redis+cluster",
            StoreUrl::Postgres(_) => "postgres",
            StoreUrl::DynamoDb(..) => "dynamodb",
        }
    }
}

/// `[user[:password]@]host:port,host:port[/path][?query]` as one URL per node, each with the
/// user, path and query. The user info ends at the last `@` (see [`redacted`]), so a password
/// may hold a raw `/` or `?`.
fn cluster_nodes(scheme: &str, rest: &str) -> Result<Vec<String>, Failure> {
    let (user, after) = match rest.rfind('@') {
        Some(at) => (&rest[..=at], &rest[at + 1..]),
        None => ("", rest),
    };
    let end = after.find(['/', '?']).unwrap_or(after.len());
    let (hosts, suffix) = after.split_at(end);
    let nodes: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|host| !host.is_empty())
        .map(|host| format!("{scheme}://{user}{host}{suffix}"))
        .collect();
    if nodes.is_empty() {
        return Err(Failure::usage(format!(
            "a `{scheme}+cluster://` URL lists the cluster's nodes: \
             `{scheme}+cluster://host:port,host:port`"
        )));
    }
    Ok(nodes)
}

/// The table of `dynamodb://TABLE`: 3 to 255 of `a-z A-Z 0-9 _ - .`.
fn table_name(rest: &str) -> Result<String, Failure> {
    let table = rest.strip_suffix('/').unwrap_or(rest);
    let valid_chars = table
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !valid_chars || !(3..=255).contains(&table.len()) {
        return Err(Failure::usage(format!(
            "`{}` does not name a table: use `dynamodb://TABLE`, where a table \
             name is 3 to 255 letters, digits, `_`, `-` or `.` (region and endpoint go in \
             --region and --endpoint, or `?region=...&endpoint=...`)",
            redacted(&format!("dynamodb://{rest}"))
        )));
    }
    Ok(table.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_stores_keep_their_url() {
        for url in [
            "redis://127.0.0.1:6379/0",
            "rediss://user:pw@cache.internal:6380",
            "postgres://idem@127.0.0.1:5432/app",
            "postgresql://127.0.0.1/app?sslmode=require",
        ] {
            let parsed = StoreUrl::parse(url).unwrap();
            assert!(
                matches!(parsed, StoreUrl::Redis(ref u) | StoreUrl::Postgres(ref u) if u == url)
            );
        }
    }

    #[test]
    fn a_cluster_url_gives_one_url_per_node() {
        assert_eq!(
            StoreUrl::parse("redis+cluster://127.0.0.1:7000,127.0.0.1:7001").unwrap(),
            StoreUrl::RedisCluster(vec![
                "redis://127.0.0.1:7000".into(),
                "redis://127.0.0.1:7001".into()
            ])
        );
        assert_eq!(
            StoreUrl::parse("rediss+cluster://u:p@a:1,b:2/?insecure").unwrap(),
            StoreUrl::RedisCluster(vec![
                "rediss://u:p@a:1/?insecure".into(),
                "rediss://u:p@b:2/?insecure".into()
            ])
        );
        assert!(StoreUrl::parse("redis+cluster://").is_err());
    }

    #[test]
    fn a_dynamodb_url_names_a_table() {
        assert_eq!(
            StoreUrl::parse("dynamodb://idem-records").unwrap(),
            StoreUrl::DynamoDb("idem-records".into(), String::new())
        );
        assert_eq!(
            StoreUrl::parse("dynamodb://idem-records?region=eu-west-1").unwrap(),
            StoreUrl::DynamoDb("idem-records".into(), "region=eu-west-1".into())
        );
        assert!(StoreUrl::parse("dynamodb://").is_err());
        assert!(StoreUrl::parse("dynamodb://a/b").is_err());
    }

    #[test]
    fn unknown_schemes_and_plain_text_are_refused_with_the_valid_forms() {
        for text in ["mysql://x", "127.0.0.1:6379"] {
            let message = StoreUrl::parse(text).unwrap_err().to_string();
            assert!(message.contains("`dynamodb://TABLE`"), "{message}");
        }
    }

    #[test]
    fn a_cluster_password_with_a_slash_stays_in_the_user_info() {
        assert_eq!(
            StoreUrl::parse("redis+cluster://u:p/w@a:1,b:2/0").unwrap(),
            StoreUrl::RedisCluster(vec![
                "redis://u:p/w@a:1/0".into(),
                "redis://u:p/w@b:2/0".into()
            ])
        );
    }
}
