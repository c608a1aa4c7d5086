//! PostgreSQL's limit on names, and the index name derived from a table's.

/// The longest name PostgreSQL keeps whole, in bytes: it cuts a longer one to its first 63
/// bytes, so two names that differ only after them would be one table.
pub const MAX_NAME_BYTES: usize = 63;

const INDEX_SUFFIX: &str = "_live_until_idx";

/// Why a store on `table` in `schema` cannot be used, when it cannot.
pub(crate) fn refusal(schema: &str, table: &str) -> Option<String> {
    let refused = |what: &str, name: &str| {
        if name.is_empty() {
            return Some(format!("the {what} name is empty"));
        }
        (name.len() > MAX_NAME_BYTES).then(|| {
            format!(
                "the {what} name `{name}` is {} bytes long: PostgreSQL keeps only the first \
                 {MAX_NAME_BYTES} bytes of a name, so two such names could share one {what}; \
                 choose a name of at most {MAX_NAME_BYTES} bytes",
                name.len()
            )
        })
    };
    refused("schema", schema).or_else(|| refused("table", table))
}

/// The name of the table's index: `{table}_live_until_idx` when it fits in 63 bytes, else
/// the table's first bytes and a digest of its whole name. Cut to 63 bytes by PostgreSQL
/// instead, the index of a 63-byte table would be named as the table itself, and
/// `CREATE INDEX IF NOT EXISTS` would skip it without a word.
pub(crate) fn index_name(table: &str) -> String {
    if table.len() + INDEX_SUFFIX.len() <= MAX_NAME_BYTES {
        return format!("{table}{INDEX_SUFFIX}");
    }
    let digest = format!("_{:016x}", fnv1a(table.as_bytes()));
    let mut head = MAX_NAME_BYTES - INDEX_SUFFIX.len() - digest.len();
    while !table.is_char_boundary(head) {
        head -= 1;
    }
    format!("{}{digest}{INDEX_SUFFIX}", &table[..head])
}

/// 64-bit FNV-1a: stable across releases and platforms, as a name derived from it must be.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_at_most_63_bytes_are_accepted() {
        assert_eq!(refusal("public", "idem_records"), None);
        assert_eq!(refusal(&"s".repeat(63), &"é".repeat(31)), None);
        let long = "t".repeat(64);
        let refused = refusal("public", &long).unwrap();
        assert!(
            refused.contains("64 bytes") && refused.contains(&long),
            "{refused}"
        );
        assert!(refusal(&"é".repeat(32), "t")
            .unwrap()
            .starts_with("the schema name"));
        assert_eq!(refusal("public", "").unwrap(), "the table name is empty");
    }

    #[test]
    fn a_short_table_keeps_its_index_name() {
        assert_eq!(index_name("idem_records"), "idem_records_live_until_idx");
        let longest = "t".repeat(MAX_NAME_BYTES - INDEX_SUFFIX.len());
        assert_eq!(index_name(&longest), format!("{longest}_live_until_idx"));
    }

    #[test]
    fn long_tables_get_index_names_that_fit_and_differ() {
        let one = format!("{}_one", "t".repeat(56));
        let two = format!("{}_two", "t".repeat(56));
        for name in [
            index_name(&one),
            index_name(&two),
            index_name(&"é".repeat(31)),
        ] {
            assert!(name.len() <= MAX_NAME_BYTES, "{name}");
            assert!(name.ends_with(INDEX_SUFFIX), "{name}");
        }
        assert_ne!(index_name(&one), index_name(&two));
        assert_eq!(index_name(&one), index_name(&one.clone()));
    }

    #[test]
    fn the_digest_is_fnv1a() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
