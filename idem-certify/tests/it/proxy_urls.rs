//! A store's URL rewritten to go through the fault proxy: the proxy's address in place of the
//! store's, which the proxy connects to; a store without one is not proxied.

#[test]
fn a_url_is_rewritten_to_go_through_a_proxy() {
    use idem_certify::proxies::through;
    assert_eq!(
        through("postgres://postgres@127.0.0.1:5432/db", "127.0.0.1:9"),
        Some((
            "postgres://postgres@127.0.0.1:9/db".to_owned(),
            "127.0.0.1:5432".to_owned()
        ))
    );
    assert_eq!(
        through("redis://127.0.0.1:6379/", "127.0.0.1:9").map(|(url, _)| url),
        Some("redis://127.0.0.1:9/".to_owned())
    );
    assert_eq!(
        through("http://127.0.0.1:5000", "127.0.0.1:9").map(|(url, _)| url),
        Some("http://127.0.0.1:9".to_owned())
    );
    assert_eq!(through("dynamodb://table", "127.0.0.1:9"), None);
}
