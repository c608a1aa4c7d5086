//! `rediss://`: the command reaches a redis-server that speaks only TLS (a certificate made
//! here with `openssl`, on a loopback port), and reads its records.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use idem_test_servers::redis::server::base_args;

use crate::support;

/// A redis-server with TLS on a free loopback port and no plain port; stopped when dropped.
struct TlsRedis {
    port: u16,
    child: Child,
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tools_present() -> bool {
    let present = |tool: &str| {
        Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    };
    present("redis-server") && present("openssl")
}

fn self_signed(dir: &Path) {
    let status = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=127.0.0.1", "-keyout"])
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl runs");
    assert!(status.success(), "openssl made a certificate");
}

fn start(dir: &Path) -> TlsRedis {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new("redis-server")
        // A throwaway server's arguments, with no plain port: TLS only.
        .args(base_args().map(|arg| if arg == "{port}" { "0" } else { arg }))
        .args(["--tls-port", &port.to_string(), "--tls-auth-clients", "no"])
        .arg("--tls-cert-file")
        .arg(dir.join("cert.pem"))
        .arg("--tls-key-file")
        .arg(dir.join("key.pem"))
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server starts");
    let server = TlsRedis { port, child };
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server listens on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    server
}

#[test]
fn rediss_urls_reach_a_server_over_tls() {
    if !tools_present() {
        assert!(
            std::env::var_os("IDEM_REQUIRE_BACKENDS").is_none(),
            "redis-server and openssl are required (scripts/services.sh)"
        );
        eprintln!("skipped: redis-server or openssl is not installed");
        return;
    }
    let dir = std::env::temp_dir().join(format!("idem-cli-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    self_signed(&dir);
    let server = start(&dir);

    // `#insecure`: the certificate is this test's own, trusted by no root.
    let url = format!("rediss://127.0.0.1:{}/#insecure", server.port);
    support::idem()
        .run(&["--store", &url, "get", "idem|charge|-|order-1"])
        .exits(3)
        .says("no record");
    let plain = format!("redis://127.0.0.1:{}", server.port);
    support::idem()
        .run(&["--store", &plain, "get", "idem|charge|-|order-1"])
        .exits(1);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
