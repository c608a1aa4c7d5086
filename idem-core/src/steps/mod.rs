//! The journal of a running call's steps: what it recorded in its in-progress record, so that
//! a retry resumes after them.

pub(crate) mod journal;
