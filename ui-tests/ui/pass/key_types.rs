//! The common identifier types key a call as they are.
use std::num::NonZeroU64;
use std::rc::Rc;

use idem_core::idempotent;

#[derive(serde::Serialize)]
struct Request {
    id: uuid::Uuid,
    account: Option<String>,
    attempt: NonZeroU64,
    at: Moment,
}

#[derive(serde::Serialize)]
struct Moment(u64);

impl std::fmt::Display for Moment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "t{}", self.0)
    }
}

#[idempotent(key = "req.id + req.account + req.attempt + display(req.at)")]
async fn charge(req: &Request) -> Result<u64, idem_core::Error> {
    Ok(req.attempt.get())
}

#[idempotent(key = "id + name", skip = "name")]
async fn rename(id: uuid::Uuid, name: Rc<String>) -> Result<usize, idem_core::Error> {
    Ok(name.len())
}

fn main() {
    let req = Request {
        id: uuid::Uuid::nil(),
        account: None,
        attempt: NonZeroU64::MIN,
        at: Moment(1),
    };
    let _ = charge(&req);
    let _ = rename(uuid::Uuid::nil(), Rc::new(String::new()));
}
