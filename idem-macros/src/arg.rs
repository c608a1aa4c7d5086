//! The names of the attribute's arguments.

use std::fmt;

/// One argument of `#[idempotent(...)]`, by name.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arg {
    Key,
    Ttl,
    Lease,
    OnAbort,
    Scope,
    Fingerprint,
    Skip,
    Wait,
    StoreErr,
    Store,
    Name,
    ResponseHook,
    Crate,
}

impl Arg {
    /// Every argument, in the order the docs list them.
    const ALL: [Arg; 13] = [
        Arg::Key,
        Arg::Ttl,
        Arg::Lease,
        Arg::OnAbort,
        Arg::Scope,
        Arg::Fingerprint,
        Arg::Skip,
        Arg::Wait,
        Arg::StoreErr,
        Arg::Store,
        Arg::Name,
        Arg::ResponseHook,
        Arg::Crate,
    ];

    /// The argument written `name`, if there is one.
    pub(crate) fn named(name: &str) -> Option<Arg> {
        Arg::ALL.into_iter().find(|arg| arg.as_str() == name)
    }

    /// Its name as written in the attribute.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Arg::Key => "key",
            Arg::Ttl => "ttl",
            Arg::Lease => "lease",
            Arg::OnAbort => "on_abort",
            Arg::Scope => "scope",
            Arg::Fingerprint => "fingerprint",
            Arg::Skip => "skip",
            Arg::Wait => "wait",
            Arg::StoreErr => "store_err",
            Arg::Store => "store",
            Arg::Name => "name",
            Arg::ResponseHook => "response_hook",
            Arg::Crate => "crate",
        }
    }

    /// How it is written, for error messages.
    pub(crate) fn example(self) -> &'static str {
        match self {
            Arg::Key => "key = \"req.order_id + op\"",
            Arg::Ttl => "ttl = \"24h\"",
            Arg::Lease => "lease = \"30s\"",
            Arg::OnAbort => "on_abort = \"hold\"",
            Arg::Scope => "scope = \"req.tenant\"",
            Arg::Fingerprint => "fingerprint = \"req, op\"",
            Arg::Skip => "skip = \"db\"",
            Arg::Wait => "wait = \"10s\"",
            Arg::StoreErr => "store_err = \"all\"",
            Arg::Store => "store = \"self.idem\"",
            Arg::Name => "name = \"payments::charge\"",
            Arg::ResponseHook => "response_hook = \"mark_replayed\"",
            Arg::Crate => "crate = \"idem_core\"",
        }
    }

    /// Every argument's name in backticks: "`key`, `ttl`, ...".
    pub(crate) fn list() -> String {
        Arg::ALL
            .iter()
            .map(|arg| format!("`{arg}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_argument_is_found_by_its_name_and_listed() {
        for arg in Arg::ALL {
            assert!(Arg::named(arg.as_str()) == Some(arg), "{arg}");
            assert!(arg.example().starts_with(&format!("{arg} = ")), "{arg}");
        }
        assert!(Arg::named("keys").is_none());
        assert!(Arg::list().starts_with("`key`, `ttl`, `lease`"));
    }
}
