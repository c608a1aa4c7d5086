//! Durations written as text in the attribute (`"24h"`, `"500ms"`), checked at compile time.

use syn::LitStr;

use crate::arg::Arg;

/// A duration given to the attribute, in milliseconds, with the literal it came from.
#[derive(Clone)]
pub(crate) struct Millis {
    pub(crate) ms: u64,
    pub(crate) lit: LitStr,
}

/// `idem_core::DEFAULT_TTL` (24 h), which `lease` is checked against when no `ttl` is given.
/// idem-macros does not depend on idem-core, so it is written here too; a test in idem-core
/// fails if the two ever differ.
pub(crate) const DEFAULT_TTL_MS: u64 = 86_400_000;

const UNITS: &[(&str, u64)] = &[
    ("ms", 1),
    ("s", 1_000),
    ("m", 60_000),
    ("h", 3_600_000),
    ("d", 86_400_000),
];

/// Parses `"<number><unit>"` with unit `ms`, `s`, `m`, `h` or `d`; zero is refused.
pub(crate) fn parse(arg: Arg, lit: &LitStr) -> syn::Result<Millis> {
    let text = lit.value();
    let text = text.trim();
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let scale = UNITS
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|(_, scale)| *scale);
    let (Some(scale), false) = (scale, number.is_empty()) else {
        return Err(syn::Error::new(
            lit.span(),
            format!(
                "invalid duration `{text}` for `{arg}`: write a whole number followed by a unit \
                 (`ms`, `s`, `m`, `h` or `d`), e.g. `{arg} = \"500ms\"`, `\"30s\"`, `\"10m\"`, `\"24h\"`, `\"2d\"`"
            ),
        ));
    };
    let ms = number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| {
            syn::Error::new(
                lit.span(),
                format!("duration `{text}` for `{arg}` is too long"),
            )
        })?;
    if ms == 0 {
        let hint = if arg == Arg::Wait {
            "; leave `wait` out to fail at once with `Error::InProgress`"
        } else {
            ""
        };
        return Err(syn::Error::new(
            lit.span(),
            format!("`{arg}` must be longer than zero, e.g. `{arg} = \"30s\"`{hint}"),
        ));
    }
    Ok(Millis {
        ms,
        lit: lit.clone(),
    })
}

/// Writes `ms` the way a person would, for error messages.
pub(crate) fn display(ms: u64) -> String {
    UNITS
        .iter()
        .rev()
        .find(|(_, scale)| ms.is_multiple_of(*scale))
        .map(|(unit, scale)| format!("{}{unit}", ms / scale))
        .unwrap_or_else(|| format!("{ms}ms"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> Result<u64, String> {
        let lit = LitStr::new(text, proc_macro2::Span::call_site());
        parse(Arg::Ttl, &lit)
            .map(|m| m.ms)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn every_unit_parses() {
        assert_eq!(ms("500ms"), Ok(500));
        assert_eq!(ms("30s"), Ok(30_000));
        assert_eq!(ms("10m"), Ok(600_000));
        assert_eq!(ms("24h"), Ok(86_400_000));
        assert_eq!(ms("2d"), Ok(172_800_000));
    }

    #[test]
    fn malformed_zero_and_overflowing_durations_are_refused() {
        for bad in ["", "h", "10", "1.5h", "24 hours", "-1s", "1h30m", "10S"] {
            let error = ms(bad).unwrap_err();
            assert!(error.contains("invalid duration"), "{bad}: {error}");
        }
        assert!(ms("0s").unwrap_err().contains("longer than zero"));
        assert!(ms("99999999999999999999d")
            .unwrap_err()
            .contains("too long"));
    }

    #[test]
    fn display_picks_the_largest_exact_unit() {
        assert_eq!(display(86_400_000), "1d");
        assert_eq!(display(90_000), "90s");
        assert_eq!(display(1_500), "1500ms");
    }
}
