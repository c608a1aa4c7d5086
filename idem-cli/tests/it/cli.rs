//! `idem` without a store to read: its help, and the usage errors and failures it reports
//! before any record is read.

use std::net::TcpListener;

use crate::support;

fn run(args: &[&str]) -> support::Run {
    support::idem().run(args)
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("an address").port()
}

#[test]
fn help_lists_the_commands_stores_and_exit_codes() {
    let help = run(&["--help"]);
    help.exits(0);
    for text in [
        "get",
        "list",
        "forget",
        "release",
        "purge-expired",
        "stats",
        "functions",
        "redis+cluster://",
        "dynamodb://TABLE",
        "IDEM_STORE",
        "Exit codes:",
        "3  the key has no record",
        "4  refused",
    ] {
        help.prints(text);
    }
}

#[test]
fn no_store_is_a_usage_error_that_says_how_to_give_one() {
    run(&["get", "idem|charge|-|order-1"])
        .exits(2)
        .says("--store URL or set IDEM_STORE");
}

#[test]
fn the_store_comes_from_idem_store_too() {
    support::idem()
        .env("IDEM_STORE", "mysql://127.0.0.1/x")
        .run(&["get", "idem|charge|-|order-1"])
        .exits(2)
        .says("unknown store scheme `mysql://`")
        .says("`dynamodb://TABLE`");
}

#[test]
fn bad_urls_are_usage_errors() {
    for (url, said) in [
        ("127.0.0.1:6379", "not a store URL"),
        ("redis+cluster://", "lists the cluster's nodes"),
        ("dynamodb://a/b", "does not name a table"),
        ("redis://127.0.0.1:notaport", "not a Redis URL"),
    ] {
        run(&["--store", url, "get", "idem|charge|-|order-1"])
            .exits(2)
            .says(said);
    }
}

#[test]
fn options_of_another_store_are_refused() {
    let url = format!("redis://127.0.0.1:{}", closed_port());
    run(&["--store", &url, "--table", "t", "list"])
        .exits(2)
        .says("--table applies to postgres:// stores only");
    run(&["--store", "dynamodb://records", "--schema", "s", "list"])
        .exits(2)
        .says("--schema applies to postgres:// stores only");
    run(&[
        "--store",
        "postgres://127.0.0.1/db",
        "--region",
        "eu-west-1",
        "list",
    ])
    .exits(2)
    .says("--region applies to dynamodb:// stores only");
    run(&["--store", &url, "--attribute", "key=id", "list"])
        .exits(2)
        .says("--attribute applies to dynamodb:// stores only");
}

#[test]
fn dynamodb_needs_a_region_and_credentials() {
    run(&[
        "--store",
        "dynamodb://records",
        "get",
        "idem|charge|-|order-1",
    ])
    .exits(2)
    .says("--region");
    run(&[
        "--store",
        "dynamodb://records",
        "--region",
        "us-east-1",
        "get",
        "idem|charge|-|order-1",
    ])
    .exits(2)
    .says("AWS_ACCESS_KEY_ID");
}

#[test]
fn an_unreachable_store_fails_without_showing_its_password() {
    let redis = format!("redis://:hunter2@127.0.0.1:{}/", closed_port());
    let run_redis = run(&["--store", &redis, "get", "idem|charge|-|order-1"]);
    run_redis
        .exits(1)
        .says("could not connect")
        .says(":***@127.0.0.1");
    let postgres = format!("postgres://idem:hunter2@127.0.0.1:{}/app", closed_port());
    let run_postgres = run(&["--store", &postgres, "list"]);
    run_postgres.exits(1).says("could not connect");
    for failed in [run_redis, run_postgres] {
        assert!(!failed.stderr.contains("hunter2"), "{failed:#?}");
    }
}

/// Every form of store URL that holds a secret, each pointed at a closed loopback port (or
/// refused before connecting): the secret is nowhere in what `idem` prints.
#[test]
fn no_secret_of_a_store_url_is_ever_printed() {
    let port = closed_port();
    let other = closed_port();
    let forms: Vec<(String, &str)> = vec![
        (
            format!("postgres://u@127.0.0.1:{port}/db?password=Qpw1secret"),
            "Qpw1secret",
        ),
        (
            format!("postgresql://127.0.0.1:{port}/db?user=u&password=Qpw2secret"),
            "Qpw2secret",
        ),
        (
            format!("postgres://127.0.0.1:{port}/db?sslmode=disable&SSLPassword=Qpw3secret"),
            "Qpw3secret",
        ),
        (
            format!("redis://u:hun?Qpw4secret@127.0.0.1:{port}"),
            "Qpw4secret",
        ),
        (
            format!("postgres://u:hun/Qpw5secret@127.0.0.1:{port}/db"),
            "Qpw5secret",
        ),
        (
            format!("redis://u:hun/Qpw6secret@127.0.0.1:{port}/0"),
            "Qpw6secret",
        ),
        (
            format!("redis+cluster://u:Qpw7secret@127.0.0.1:{port},127.0.0.1:{other}"),
            "Qpw7secret",
        ),
        (
            format!("redis+cluster://u:p/Qpw8secret@127.0.0.1:{port},127.0.0.1:{other}/0"),
            "Qpw8secret",
        ),
        (
            format!("redis://127.0.0.1:{port}/0?token=Qpw9secret"),
            "Qpw9secret",
        ),
        (
            format!("postgres://u:p%2FQpw10secret@127.0.0.1:{port}/db"),
            "Qpw10secret",
        ),
        (
            "dynamodb://t?X-Amz-Signature=Qpw11secret".to_owned(),
            "Qpw11secret",
        ),
        (format!("u:Qpw12secret@127.0.0.1:{port}"), "Qpw12secret"),
        (
            "mysql://u:Qpw13secret@127.0.0.1/x".to_owned(),
            "Qpw13secret",
        ),
    ];
    std::thread::scope(|threads| {
        for (url, secret) in &forms {
            threads.spawn(move || {
                for args in [
                    vec!["--store", url.as_str(), "list"],
                    vec![
                        "--store",
                        url.as_str(),
                        "--json",
                        "get",
                        "idem|charge|-|o-1",
                    ],
                ] {
                    let failed = run(&args);
                    assert_ne!(failed.code, 0, "{failed:#?}");
                    assert!(
                        !failed.stdout.contains(secret) && !failed.stderr.contains(secret),
                        "{secret} printed: {failed:#?}"
                    );
                }
            });
        }
    });
    // A DynamoDB endpoint's secrets, too.
    let endpoint = format!("http://u:Qpw14secret@127.0.0.1:{port}/?sig=Qpw15secret");
    let failed = support::idem()
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .run(&[
            "--store",
            "dynamodb://records",
            "--region",
            "us-east-1",
            "--endpoint",
            &endpoint,
            "get",
            "idem|charge|-|o-1",
        ]);
    assert_ne!(failed.code, 0, "{failed:#?}");
    for secret in ["Qpw14secret", "Qpw15secret"] {
        let printed = format!("{}{}", failed.stdout, failed.stderr);
        assert!(!printed.contains(secret), "{secret} printed: {failed:#?}");
    }
}

#[test]
fn a_malformed_key_is_refused_before_connecting() {
    run(&["--store", "redis://127.0.0.1:1/", "get", "order-1"])
        .exits(2)
        .says("not an idempotency key")
        .says("namespace|function|scope|parts");
}

#[test]
fn release_needs_a_key_and_a_bad_limit_is_clap_usage() {
    run(&["release"]).exits(2);
    run(&["--store", "redis://127.0.0.1:1/", "list", "--limit", "many"]).exits(2);
    run(&[
        "--store",
        "redis://127.0.0.1:1/",
        "purge-expired",
        "--batch",
        "0",
    ])
    .exits(2);
}
