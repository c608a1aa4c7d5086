//! Whether a retry accepts the coding its stored answer is in: `Accept-Encoding` (RFC 9110,
//! 12.5.3), and gRPC's `grpc-accept-encoding`.

use http::header::ACCEPT_ENCODING;
use http::HeaderMap;

/// The request header listing the message compressions a gRPC client accepts.
pub(crate) const GRPC_ACCEPT_ENCODING: &str = "grpc-accept-encoding";

/// Whether a request with `headers` accepts a body in the content coding `encoding`. A request
/// without `Accept-Encoding` accepts any coding; otherwise the coding must be listed, or
/// covered by `*`, with a weight above zero.
pub(crate) fn accepts(headers: &HeaderMap, encoding: &str) -> bool {
    let wanted = normalise(encoding);
    if wanted == "identity" {
        return true;
    }
    let mut values = headers.get_all(ACCEPT_ENCODING).iter().peekable();
    if values.peek().is_none() {
        return true;
    }
    let mut star = None;
    for value in values {
        let Ok(value) = value.to_str() else {
            continue;
        };
        for member in value.split(',') {
            let mut parts = member.split(';');
            let coding = normalise(parts.next().unwrap_or("").trim());
            let weighted = parts.all(|param| !is_zero_weight(param));
            if coding == wanted {
                return weighted;
            }
            if coding == "*" {
                star = Some(weighted);
            }
        }
    }
    star.unwrap_or(false)
}

/// Whether a gRPC request with `headers` accepts a message compressed with `encoding`: only if
/// its `grpc-accept-encoding` lists it (a gRPC client without that header accepts none).
pub(crate) fn accepts_grpc(headers: &HeaderMap, encoding: &str) -> bool {
    encoding.eq_ignore_ascii_case("identity")
        || headers
            .get_all(GRPC_ACCEPT_ENCODING)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .any(|listed| listed.trim().eq_ignore_ascii_case(encoding))
}

fn normalise(coding: &str) -> String {
    match coding.to_ascii_lowercase().as_str() {
        "x-gzip" => "gzip".to_owned(),
        "x-compress" => "compress".to_owned(),
        other => other.to_owned(),
    }
}

/// Whether `param` is `q=0` (or `q=0.0`, `q=0.000`).
fn is_zero_weight(param: &str) -> bool {
    let Some((name, weight)) = param.split_once('=') else {
        return false;
    };
    name.trim().eq_ignore_ascii_case("q")
        && weight
            .trim()
            .parse::<f32>()
            .is_ok_and(|weight| weight <= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(ACCEPT_ENCODING, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn listed_codings_and_stars_are_accepted_unless_weighted_zero() {
        assert!(accepts(&accept(&[]), "gzip"));
        assert!(accepts(&accept(&["gzip, br"]), "gzip"));
        assert!(accepts(&accept(&["br", "GZIP;q=0.5"]), "gzip"));
        assert!(accepts(&accept(&["x-gzip"]), "gzip"));
        assert!(accepts(&accept(&["*"]), "zstd"));
        assert!(!accepts(&accept(&["br"]), "gzip"));
        assert!(!accepts(&accept(&["gzip;q=0"]), "gzip"));
        assert!(!accepts(&accept(&["*, gzip;q=0"]), "gzip"));
        assert!(!accepts(&accept(&[""]), "gzip"));
        assert!(accepts(&accept(&["br"]), "identity"));
    }

    #[test]
    fn a_grpc_client_accepts_the_compressions_it_lists() {
        let mut headers = HeaderMap::new();
        assert!(!accepts_grpc(&headers, "gzip"));
        assert!(accepts_grpc(&headers, "identity"));
        headers.insert(GRPC_ACCEPT_ENCODING, "deflate, GZIP".parse().unwrap());
        assert!(accepts_grpc(&headers, "gzip"));
        assert!(!accepts_grpc(&headers, "zstd"));
    }
}
