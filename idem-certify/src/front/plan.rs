//! What a server process of a front-end run is told to serve: the coordinator hands it over
//! as JSON on the process's command line.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::args::FrontKind;
use crate::plan::StoreSpec;

/// What a server serves.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "serves", rename_all = "snake_case")]
pub(crate) enum Serves {
    /// The certified endpoint, behind `front`, on `store`.
    Endpoint {
        /// The front end.
        front: FrontKind,
        /// The store its layer keeps its records in.
        store: StoreSpec,
        /// The downstream service's base URL, when the endpoint charges there.
        downstream: Option<String>,
        /// Where it appends the call context of each execution.
        contexts: PathBuf,
        /// Where it appends what each attempt was answered.
        served: PathBuf,
        /// The Lambda Runtime API a function process polls for its invocations (`--front
        /// lambda`): `http://HOST:PORT/.rt`, given to it as `AWS_LAMBDA_RUNTIME_API`.
        runtime_api: Option<String>,
    },
    /// The downstream service, behind its own layer on a store of its own (in memory).
    Downstream,
}

/// One server's instructions.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ServerPlan {
    /// Its name in the histories: its slot and incarnation, `s2.3`, or `downstream`.
    pub(crate) name: String,
    /// What it serves.
    pub(crate) serves: Serves,
    /// Where it appends its history (the downstream: its charges).
    pub(crate) history: PathBuf,
    /// The layer's lease.
    pub(crate) lease_ms: u64,
}

/// The path of the certified endpoint.
pub(crate) const ORDERS: &str = "/orders";
/// The header naming the caller's id of a request, which the handler records with the call
/// context it runs in.
pub(crate) const REQUEST: &str = "x-certify-request";
/// The path of the downstream service's endpoint.
pub(crate) const CHARGES: &str = "/charges";
