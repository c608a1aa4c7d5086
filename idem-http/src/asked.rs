//! What a request asked for that shapes the layer's own answers, and the answer it gets from
//! a stored response.

use http::header::ACCEPT_ENCODING;
use http::{HeaderMap, HeaderName, HeaderValue, Response};
use idem_core::Answered;

use crate::answer;
use crate::body::Body;
use crate::config::Config;
use crate::request::encoding;
use crate::response::hook::Replay;
use crate::response::problem::Problem;
use crate::response::replay_limits::ReplayLimits;
use crate::response::stored::StoredResponse;
use crate::response::stored::IDEMPOTENT_REPLAYED;
use crate::{grpc, TARGET};

/// What the request asked for that shapes the layer's own answers.
pub(crate) struct Asked {
    pub(crate) grpc: bool,
    /// The request's `Accept-Encoding` and `grpc-accept-encoding` values, for a replay of an
    /// encoded body.
    pub(crate) accepted: HeaderMap,
}

impl Asked {
    pub(crate) fn of(headers: &HeaderMap) -> Self {
        let mut accepted = HeaderMap::new();
        for name in [
            ACCEPT_ENCODING,
            HeaderName::from_static(encoding::GRPC_ACCEPT_ENCODING),
        ] {
            for value in headers.get_all(&name) {
                accepted.append(name.clone(), value.clone());
            }
        }
        Asked {
            grpc: grpc::is_grpc(headers),
            accepted,
        }
    }

    /// `problem` as this request's client understands it.
    pub(crate) fn render(&self, problem: Problem) -> Response<Body> {
        if self.grpc {
            grpc::problem_response(problem)
        } else {
            problem.into_response()
        }
    }
}

/// The answer from a stored response: the handler's own the first time, else the replay (or
/// the problem saying why there is none).
pub(crate) fn answer_stored(
    executed: Answered<StoredResponse>,
    key: &str,
    asked: &Asked,
    config: &Config,
) -> Response<Body> {
    let mut stored = executed.value;
    if !executed.replayed {
        if let Some(fresh) = stored.take_fresh() {
            return fresh;
        }
    }
    if let Some((status, why)) = stored.not_kept_reason() {
        let mut answer = asked.render(answer::not_kept(key, status, why));
        if executed.replayed {
            answer.headers_mut().insert(
                IDEMPOTENT_REPLAYED,
                HeaderValue::from_static(idem_protocol::header::REPLAYED),
            );
        }
        return answer;
    }
    let refused = stored
        .content_encodings()
        .find(|coding| !encoding::accepts(&asked.accepted, coding))
        .or_else(|| {
            let compression = stored.grpc_encoding()?;
            (!encoding::accepts_grpc(&asked.accepted, compression)).then_some(compression)
        });
    if let Some(coding) = refused {
        return asked.render(answer::encoding_not_accepted(key, coding));
    }
    let limits = ReplayLimits {
        headers: &config.replay_headers,
        max_body: config.max_response_body,
    };
    match stored.into_replay(&limits) {
        Ok(mut response) => {
            if let Some(hook) = &config.response_hook {
                hook(&mut response, &Replay { key });
            }
            response
        }
        Err(reason) => {
            tracing::error!(target: TARGET, key = config.logged_key(key), reason, "the stored response cannot be replayed");
            asked.render(answer::failed(key))
        }
    }
}
