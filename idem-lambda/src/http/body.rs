//! The request body a handler gets as `lambda_http` gave it: text, binary or empty, though
//! the layer in between hands on bytes.

use lambda_http::http::Extensions;
use lambda_http::Body;

/// Which variant of [`Body`] the event's body was, kept in the request's extensions while the
/// layer holds the request (it reads the body into bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyKind {
    Empty,
    Text,
    Binary,
}

impl BodyKind {
    pub(crate) fn of(body: &Body) -> Self {
        match body {
            Body::Empty => BodyKind::Empty,
            Body::Text(_) => BodyKind::Text,
            // `Binary`, or a variant of a later version: bytes either way.
            _ => BodyKind::Binary,
        }
    }
}

/// The body `bytes` as the variant `extensions` remembers (taking the mark out), so that a
/// handler matching on `Body::Text` finds its text. Without a mark, text when the bytes are
/// UTF-8.
pub(crate) fn restore(extensions: &mut Extensions, bytes: Vec<u8>) -> Body {
    match extensions.remove::<BodyKind>() {
        Some(BodyKind::Empty) if bytes.is_empty() => Body::Empty,
        Some(BodyKind::Binary) => Body::Binary(bytes),
        Some(BodyKind::Empty | BodyKind::Text) | None => match String::from_utf8(bytes) {
            Ok(text) if text.is_empty() => Body::Empty,
            Ok(text) => Body::Text(text),
            Err(not_text) => Body::Binary(not_text.into_bytes()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(body: Body) -> Body {
        let mut extensions = Extensions::new();
        extensions.insert(BodyKind::of(&body));
        let bytes = body.as_ref().to_vec();
        let restored = restore(&mut extensions, bytes);
        assert!(
            extensions.get::<BodyKind>().is_none(),
            "the mark is taken out"
        );
        restored
    }

    #[test]
    fn every_variant_comes_back_as_it_was() {
        assert_eq!(round_trip(Body::Empty), Body::Empty);
        assert_eq!(round_trip(Body::Text("{}".into())), Body::Text("{}".into()));
        assert_eq!(
            round_trip(Body::Binary(b"{}".to_vec())),
            Body::Binary(b"{}".to_vec())
        );
    }
}
