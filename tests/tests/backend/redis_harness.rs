//! The test harness itself: a server it starts accepts connections, refuses them once killed,
//! and comes back on the same port.

use std::net::TcpStream;

use idem_test_servers::redis::server::TestRedis;

fn owned_server_is_killed_and_restarted_on_its_port() {
    let Some(mut redis) = TestRedis::start_owned() else {
        return;
    };
    assert!(redis.is_owned());
    let addr = redis.process().addr();
    assert!(addr.ip().is_loopback());
    assert!(TcpStream::connect(addr).is_ok());
    assert!(redis.url().ends_with(&format!(":{}/", addr.port())));

    redis.kill();
    assert!(!redis.process().is_running());
    assert!(
        TcpStream::connect(addr).is_err(),
        "a killed server refuses connections"
    );

    redis.restart();
    assert!(redis.process().is_running());
    assert_eq!(redis.process().addr(), addr);
    assert!(TcpStream::connect(addr).is_ok());

    drop(redis);
    assert!(
        TcpStream::connect(addr).is_err(),
        "dropping the handle kills the server"
    );
}

idem_tests::module_tests! {
    fn owned_server_is_killed_and_restarted_on_its_port,
}
