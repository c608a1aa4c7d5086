//! A `lambda_http` function behind `idem_lambda::http::layer`, deployed as Lambda runs it:
//! cargo-lambda's emulator of the Runtime API, the function in a process of its own polling
//! it, and requests sent as API Gateway sends them (HTTP through a function URL, REST and HTTP
//! API events through the invoke API). The contract is idem-http's, with the principal the
//! authorizer named.
//!
//! The test binary is also the function: started with `IDEM_TEST_LAMBDA_HTTP_FUNCTION` set,
//! it runs `lambda_http::run` instead of the tests (see the binary's `main`).

mod deployed;
mod events;
pub mod function;

use deployed::Deployed;
use function::Setup;
use idem_tests::harness::Test;
use serde_json::json;

/// The harness's tests, each an `async fn` of this file run on a runtime of its own, named as
/// a module's test is.
macro_rules! asynchronous_tests {
    ($($test:ident),* $(,)?) => {
        vec![$(Test::asynchronous(
            concat!("http_function::", stringify!($test)),
            || Box::pin($test()),
        )),*]
    };
}

/// The function's tests, for the binary's harness.
pub fn tests() -> Vec<Test> {
    asynchronous_tests!(
        a_retry_through_the_function_url_is_replayed,
        a_keyed_request_without_a_principal_is_refused,
        a_rest_api_event_is_replayed_for_its_principal,
        two_principals_with_one_key_get_two_runs,
        the_handler_runs_in_the_call_and_a_step_survives_a_502,
        a_quota_counts_each_principals_records,
    )
}

/// A function URL carries no authorizer: with one key space shared by every request
/// (`Unscoped::Shared`), a retry is replayed and another body under its key is refused.
async fn a_retry_through_the_function_url_is_replayed() {
    let Some(function) = Deployed::start(Setup::SharedUnscoped) else {
        return;
    };
    let order = r#"{"order": "o-1", "amount": 5}"#;
    let first = function.post_to_url("/orders", Some("url-1"), order).await;
    assert_eq!(first.status, 201, "{first:?}");
    let seen = first.json();
    assert_eq!(seen["run"], 1);
    assert_eq!(
        seen["in_call"], true,
        "the handler runs inside the engine's call: {seen}"
    );
    assert_eq!(
        seen["body"], "text",
        "the body as the event carried it: {seen}"
    );
    assert_eq!(seen["method"], "POST");
    assert_eq!(seen["path"], "/orders");
    assert_eq!(seen["request_context"], true, "{seen}");
    assert_eq!(seen["lambda_context"], true, "{seen}");
    assert!(!first.replayed());

    let retry = function.post_to_url("/orders", Some("url-1"), order).await;
    assert_eq!(retry.status, 201, "{retry:?}");
    assert!(
        retry.replayed(),
        "the retry is answered from the store: {retry:?}"
    );
    assert_eq!(retry.json(), seen, "the retry gets the first answer");

    let other = function
        .post_to_url("/orders", Some("url-1"), r#"{"order": "o-2", "amount": 5}"#)
        .await;
    assert_eq!(other.status, 422, "{other:?}");
    assert_eq!(
        other.header("content-type"),
        Some("application/problem+json")
    );

    let unkeyed = function.post_to_url("/orders", None, order).await;
    assert_eq!(
        unkeyed.json()["run"],
        2,
        "the handler ran once for the key, then for this"
    );
}

/// The layer's default: a keyed request with no principal (a function URL without IAM auth,
/// an HTTP API route without an authorizer) is refused, and the handler does not run.
async fn a_keyed_request_without_a_principal_is_refused() {
    let Some(function) = Deployed::start(Setup::Default) else {
        return;
    };
    let order = json!({"order": "o-1"});
    let through_url = function
        .post_to_url("/orders", Some("anon-1"), &order.to_string())
        .await;
    assert_eq!(through_url.status, 400, "{through_url:?}");
    assert_eq!(
        through_url.json()["type"],
        idem_http::problem::UNSCOPED,
        "{through_url:?}"
    );
    let from_http_api = function
        .invoke(&events::http_api("anon-2", &order, None))
        .await;
    assert_eq!(from_http_api.status, 400, "{from_http_api:?}");
    assert_eq!(from_http_api.json()["type"], idem_http::problem::UNSCOPED);

    let unkeyed = function
        .post_to_url("/orders", None, &order.to_string())
        .await;
    assert_eq!(unkeyed.status, 201, "{unkeyed:?}");
    assert_eq!(unkeyed.json()["run"], 1, "the refused requests ran nothing");
}

/// A REST API event whose Lambda authorizer named a principal: its redelivery is replayed
/// (one run), another body under its key is refused.
async fn a_rest_api_event_is_replayed_for_its_principal() {
    let Some(function) = Deployed::start(Setup::Default) else {
        return;
    };
    let order = json!({"order": "o-1", "amount": 5});
    let first = function
        .invoke(&events::rest_api("rest-1", &order, Some("user-a")))
        .await;
    assert_eq!(first.status, 201, "{first:?}");
    assert_eq!(first.json()["run"], 1);
    assert_eq!(first.json()["in_call"], true);

    // API Gateway delivers the retry as a new event: another request id.
    let retry = function
        .invoke(&events::rest_api("rest-1", &order, Some("user-a")))
        .await;
    assert_eq!(retry.status, 201, "{retry:?}");
    assert!(retry.replayed(), "{retry:?}");
    assert_eq!(retry.json(), first.json());

    let other = function
        .invoke(&events::rest_api(
            "rest-1",
            &json!({"order": "o-1", "amount": 6}),
            Some("user-a"),
        ))
        .await;
    assert_eq!(other.status, 422, "{other:?}");
    assert_eq!(
        other.json()["type"],
        idem_http::problem::KEY_REUSED,
        "{other:?}"
    );
}

/// One key sent by two principals is two keys: a REST API's authorizer `principalId`s, and
/// an HTTP API's JWT subjects. Each gets its own run, and its own replay.
async fn two_principals_with_one_key_get_two_runs() {
    let Some(function) = Deployed::start(Setup::Default) else {
        return;
    };
    let order = json!({"order": "o-1"});
    let alice = function
        .invoke(&events::rest_api("shared-1", &order, Some("alice")))
        .await;
    let bob = function
        .invoke(&events::rest_api("shared-1", &order, Some("bob")))
        .await;
    assert_eq!((alice.status, bob.status), (201, 201), "{alice:?} {bob:?}");
    assert_eq!(
        (alice.json()["run"].clone(), bob.json()["run"].clone()),
        (json!(1), json!(2))
    );
    assert!(!bob.replayed(), "bob never gets alice's answer: {bob:?}");
    let alice_again = function
        .invoke(&events::rest_api("shared-1", &order, Some("alice")))
        .await;
    assert_eq!(
        alice_again.json(),
        alice.json(),
        "alice gets her own answer back"
    );

    let carol = function
        .invoke(&events::http_api("shared-1", &order, Some("sub-carol")))
        .await;
    let dave = function
        .invoke(&events::http_api("shared-1", &order, Some("sub-dave")))
        .await;
    assert_eq!(
        (carol.status, dave.status),
        (201, 201),
        "{carol:?} {dave:?}"
    );
    assert_eq!(
        (carol.json()["run"].clone(), dave.json()["run"].clone()),
        (json!(3), json!(4))
    );
    let dave_again = function
        .invoke(&events::http_api("shared-1", &order, Some("sub-dave")))
        .await;
    assert!(dave_again.replayed(), "{dave_again:?}");
    assert_eq!(dave_again.json(), dave.json());
}

/// The handler runs inside the engine's call: its `charge` step is recorded before the
/// downstream fails (502), the retry resumes after it (no second charge), and another body
/// under the key is refused.
async fn the_handler_runs_in_the_call_and_a_step_survives_a_502() {
    let Some(function) = Deployed::start(Setup::Default) else {
        return;
    };
    let order = json!({"order": "o-1", "fail_once_after_charge": true});
    let failed = function
        .invoke(&events::rest_api("step-1", &order, Some("alice")))
        .await;
    assert_eq!(failed.status, 502, "{failed:?}");
    assert_eq!(failed.json()["in_call"], true, "{failed:?}");
    assert_eq!(failed.json()["charges"], 1);

    let retry = function
        .invoke(&events::rest_api("step-1", &order, Some("alice")))
        .await;
    assert_eq!(retry.status, 201, "{retry:?}");
    let seen = retry.json();
    assert_eq!(seen["run"], 2, "the retry ran the handler again: {seen}");
    assert_eq!(seen["charge"], 1, "the recorded charge came back: {seen}");
    assert_eq!(seen["charges"], 1, "the step did not run again: {seen}");

    let other = function
        .invoke(&events::rest_api(
            "step-1",
            &json!({"order": "o-2"}),
            Some("alice"),
        ))
        .await;
    assert_eq!(other.status, 422, "{other:?}");
}

/// A quota counts each principal's records apart: one principal over it gets 429 for a new
/// key, nothing runs, and its key already used is still replayed; another principal is
/// within its own.
async fn a_quota_counts_each_principals_records() {
    let Some(function) = Deployed::start(Setup::OneRecordPerPrincipal) else {
        return;
    };
    let order = json!({"order": "o-1"});
    let first = function
        .invoke(&events::http_api("quota-1", &order, Some("sub-alice")))
        .await;
    assert_eq!(first.status, 201, "{first:?}");
    let over = function
        .invoke(&events::http_api("quota-2", &order, Some("sub-alice")))
        .await;
    assert_eq!(over.status, 429, "{over:?}");
    assert_eq!(over.json()["type"], idem_http::problem::QUOTA_EXCEEDED);
    assert!(over.header("retry-after").is_some(), "{over:?}");
    let replay = function
        .invoke(&events::http_api("quota-1", &order, Some("sub-alice")))
        .await;
    assert!(replay.replayed(), "{replay:?}");
    let bob = function
        .invoke(&events::http_api("quota-2", &order, Some("sub-bob")))
        .await;
    assert_eq!(bob.status, 201, "another principal's allowance: {bob:?}");
    assert_eq!(bob.json()["run"], 2, "alice's refused request ran nothing");
}
