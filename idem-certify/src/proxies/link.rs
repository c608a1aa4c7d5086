//! One proxied connection: two pumps, one a direction, that read chunks as they come and
//! write them in order under the fault in force. A pump that must lose bytes closes the whole
//! link instead.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::fault::{Active, Direction, Effect, Epoch};

/// How a pump ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    /// Its reader reached the end, and everything read was written: the other direction
    /// may go on (a half-closed connection).
    Eof,
    /// The link must close both ways.
    Close,
}

/// Bytes read, and when.
struct Chunk {
    read_at: Instant,
    bytes: Vec<u8>,
}

/// Forwards between `client` and `store` under the faults `faults` announces, until either
/// side closes, or a fault closes the link; then both connections are dropped, closed.
pub(crate) async fn run(client: TcpStream, store: TcpStream, faults: watch::Receiver<Epoch>) {
    let _ = client.set_nodelay(true);
    let _ = store.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (store_read, store_write) = store.into_split();
    let to_store = pump(client_read, store_write, Direction::ToStore, faults.clone());
    let to_client = pump(store_read, client_write, Direction::ToClient, faults);
    tokio::pin!(to_store, to_client);
    let (mut store_done, mut client_done) = (false, false);
    while !(store_done && client_done) {
        let ended = tokio::select! {
            ended = &mut to_store, if !store_done => { store_done = true; ended }
            ended = &mut to_client, if !client_done => { client_done = true; ended }
        };
        if ended == Ended::Close {
            return;
        }
    }
}

/// One direction: a reader that timestamps chunks, and a writer that delivers them in order.
async fn pump<R, W>(
    reader: R,
    writer: W,
    direction: Direction,
    faults: watch::Receiver<Epoch>,
) -> Ended
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (chunks, queue) = mpsc::unbounded_channel();
    let read = read_side(reader, chunks, faults.clone());
    let write = write_side(writer, queue, direction, faults);
    tokio::pin!(read, write);
    tokio::select! {
        ended = &mut read => match ended {
            // The queue is closed with the reader: the writer delivers what is in it, then
            // passes the end on.
            Ended::Eof => write.await,
            Ended::Close => Ended::Close,
        },
        ended = &mut write => ended,
    }
}

/// Reads chunks into the queue as they arrive, so a delay counts from when each arrived.
/// Closes the link when the proxy starts refusing connections, or stops.
async fn read_side<R: AsyncRead + Unpin>(
    mut reader: R,
    chunks: mpsc::UnboundedSender<Chunk>,
    mut faults: watch::Receiver<Epoch>,
) -> Ended {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        tokio::select! {
            read = reader.read(&mut buffer) => match read {
                Ok(0) => return Ended::Eof,
                Ok(n) => {
                    let chunk = Chunk { read_at: Instant::now(), bytes: buffer[..n].to_vec() };
                    if chunks.send(chunk).is_err() {
                        return Ended::Close;
                    }
                }
                Err(_) => return Ended::Close,
            },
            changed = faults.changed() => {
                if changed.is_err() || faults.borrow().active == Active::Refuse {
                    return Ended::Close;
                }
            }
        }
    }
}

/// Writes each chunk under the fault in force when it comes up: at once, late, or never, in
/// which case the link closes. Bytes after a lost one are never written.
async fn write_side<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut queue: mpsc::UnboundedReceiver<Chunk>,
    direction: Direction,
    mut faults: watch::Receiver<Epoch>,
) -> Ended {
    let mut rng = fastrand::Rng::new();
    // Bytes written under a cut, and which cut it was.
    let mut cut: Option<(u64, u64)> = None;
    while let Some(chunk) = queue.recv().await {
        let epoch = *faults.borrow_and_update();
        let mut bytes = chunk.bytes.as_slice();
        let mut close_after = false;
        match epoch.active.effect(direction, &mut rng) {
            Effect::Pass => {}
            Effect::Delay(delay) => tokio::time::sleep_until(chunk.read_at + delay).await,
            Effect::Hold => {
                // The bytes wait until the fault ends; they never arrive: the link closes.
                while faults.borrow().generation == epoch.generation {
                    if faults.changed().await.is_err() {
                        break;
                    }
                }
                return Ended::Close;
            }
            Effect::CutAfter(limit) => {
                let written = match cut {
                    Some((generation, written)) if generation == epoch.generation => written,
                    _ => 0,
                };
                let left = usize::try_from(limit.saturating_sub(written)).unwrap_or(usize::MAX);
                if bytes.len() >= left {
                    bytes = &bytes[..left];
                    close_after = true;
                }
                cut = Some((epoch.generation, written + bytes.len() as u64));
            }
            Effect::Close => return Ended::Close,
        }
        if writer.write_all(bytes).await.is_err() || close_after {
            return Ended::Close;
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), writer.shutdown()).await;
    Ended::Eof
}
