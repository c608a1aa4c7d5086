//! The fault proxy makes the faults a network makes, and nothing else: sequence-numbered
//! traffic through an echo server, under every fault kind, arrives in order and without a gap
//! on every connection that stays open. A connection may close (and the client connect again);
//! it may never resume after lost bytes, which no TCP connection does.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idem_certify::proxies::{NetFault, Proxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Frames a write.
const BURST: usize = 8;

/// The lease the faults are scaled by: latency is about a quarter of it.
const LEASE_MS: u64 = 400;

/// An echo server on a free loopback port: every byte read is written back.
async fn echo_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut read, mut write) = stream.split();
                let _ = tokio::io::copy(&mut read, &mut write).await;
            });
        }
    });
    address
}

/// What the client saw.
#[derive(Default)]
struct Seen {
    /// Frames received back, in order, over every connection.
    received: AtomicU64,
    /// Connections that ended (closed or reset) and were replaced.
    closes: AtomicU64,
    /// Frames that arrived out of sequence on an open connection: the proxy lost or
    /// reordered bytes. Each is (expected, got).
    gaps: Mutex<Vec<(u64, u64)>>,
    /// The longest a frame took to come back.
    slowest: Mutex<Duration>,
}

/// Sends numbered 16-byte frames (number, send time) through `listen` until `stop`, checking
/// that each connection echoes back exactly the frames it was sent, in order.
async fn client(listen: String, seen: Arc<Seen>, stop: Arc<AtomicBool>) {
    let start = Instant::now();
    let mut next = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let Ok(stream) = TcpStream::connect(&listen).await else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        let (mut read, mut write) = stream.into_split();
        let first = next;
        let sender_stop = stop.clone();
        let sender = tokio::spawn(async move {
            let mut number = first;
            while !sender_stop.load(Ordering::SeqCst) {
                // A burst of frames a write, as a pipelining client sends them.
                let mut burst = Vec::with_capacity(16 * BURST);
                let sent_at = start.elapsed().as_micros() as u64;
                for at in number..number + BURST as u64 {
                    burst.extend_from_slice(&at.to_be_bytes());
                    burst.extend_from_slice(&sent_at.to_be_bytes());
                }
                if write.write_all(&burst).await.is_err() {
                    break;
                }
                number += BURST as u64;
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            number
        });
        let mut expected = first;
        let mut frame = [0u8; 16];
        loop {
            let read_back = tokio::select! {
                read_back = read.read_exact(&mut frame) => read_back,
                _ = tokio::time::sleep(Duration::from_millis(50)), if stop.load(Ordering::SeqCst) => break,
            };
            if read_back.is_err() {
                seen.closes.fetch_add(1, Ordering::SeqCst);
                break;
            }
            let got = u64::from_be_bytes(frame[..8].try_into().unwrap());
            if got != expected {
                seen.gaps.lock().unwrap().push((expected, got));
                // Go on from what came: one gap is reported once.
            }
            expected = got + 1;
            let sent_at = u64::from_be_bytes(frame[8..].try_into().unwrap());
            let took = Duration::from_micros(start.elapsed().as_micros() as u64 - sent_at);
            let mut slowest = seen.slowest.lock().unwrap();
            *slowest = (*slowest).max(took);
            seen.received.fetch_add(1, Ordering::SeqCst);
        }
        sender.abort();
        next = sender.await.unwrap_or(expected).max(expected) + 1_000;
    }
}

/// Runs traffic through a proxy while `fault` comes and goes `rounds` times; returns what the
/// client saw, and how many frames came back after the last heal.
async fn under(fault: NetFault, rounds: u32) -> (Arc<Seen>, u64) {
    let upstream = echo_server().await;
    let mut proxy = Proxy::start("self-test", &upstream).await.unwrap();
    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));
    let traffic = tokio::spawn(client(proxy.listen.clone(), seen.clone(), stop.clone()));
    let mut rng = fastrand::Rng::with_seed(7);
    tokio::time::sleep(Duration::from_millis(100)).await;
    for _ in 0..rounds {
        proxy.inject(fault, LEASE_MS, &mut rng).await;
        tokio::time::sleep(Duration::from_millis(LEASE_MS)).await;
        proxy.heal(fault).await.unwrap();
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    let before_last = seen.received.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after_heal = seen.received.load(Ordering::SeqCst) - before_last;
    stop.store(true, Ordering::SeqCst);
    traffic.await.unwrap();
    (seen, after_heal)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_closes_or_delivers_in_order_never_a_gap() {
    for fault in NetFault::ALL {
        let (seen, after_heal) = under(fault, 3).await;
        let gaps = seen.gaps.lock().unwrap().clone();
        assert!(
            gaps.is_empty(),
            "{}: bytes lost or reordered inside open connections (expected, got): {gaps:?}",
            fault.name()
        );
        assert!(
            after_heal > 0,
            "{}: traffic flows again once the fault is healed",
            fault.name()
        );
        let closes = seen.closes.load(Ordering::SeqCst);
        let slowest = *seen.slowest.lock().unwrap();
        eprintln!(
            "{}: {} frames back, {closes} closes, slowest {slowest:?}, {after_heal} after the heal",
            fault.name(),
            seen.received.load(Ordering::SeqCst)
        );
        // The fault was really made: a self-test of a proxy that does nothing must fail.
        match fault {
            NetFault::Latency => assert!(
                slowest >= Duration::from_millis(LEASE_MS / 4),
                "{}: frames were delayed (slowest {slowest:?})",
                fault.name()
            ),
            _ => assert!(
                closes >= 1,
                "{}: connections were closed ({closes})",
                fault.name()
            ),
        }
    }
}
