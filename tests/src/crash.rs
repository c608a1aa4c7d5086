//! A real crash between two steps: a child process runs a checkout whose charge and ledger
//! booking are [`step`]s, records the charge, and is killed with SIGKILL
//! before the booking. The parent's retry, once the child's lease passed, resumes: the charge
//! is replayed from the record, the booking runs once, and the outcome is stored.
//!
//! The child is the `checkout_child` binary of this package; its side effects are counted in
//! files, which outlive it.

use std::fs::{self, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idem_core::{
    step,
    store::{Record, Store},
    Answered, Call, Error, Fingerprint, Idempotency,
};

/// The namespace of the checkout's keys, in the child and the parent.
pub const NAMESPACE: &str = "crash";

/// The child's lease: the parent's retry waits for it to pass.
pub const LEASE: Duration = Duration::from_secs(2);

/// How long the parent's retry waits for the dead child's lease.
const WAIT: Duration = Duration::from_secs(30);

/// What the child prints once its charge step is recorded.
pub const CHARGED: &str = "charged";

/// The checkout's side effects, each a line appended to a file of its own.
#[derive(Debug)]
pub struct Effects {
    dir: PathBuf,
}

impl Effects {
    /// Effects counted in a fresh directory.
    pub fn new() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "idem-crash-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&dir).expect("a temporary directory");
        Effects { dir }
    }

    /// Effects counted in `dir`, as the parent set it up.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Effects { dir: dir.into() }
    }

    /// The directory the counts live in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs the side effect `what` once; returns how many times it has run.
    fn run(&self, what: &str) -> usize {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(what))
            .expect("the effects directory is writable");
        writeln!(file, "{what}").expect("the effect is counted");
        file.sync_all().expect("the count reaches the disk");
        self.count(what)
    }

    /// How many times the side effect `what` ran.
    pub fn count(&self, what: &str) -> usize {
        fs::read_to_string(self.dir.join(what)).map_or(0, |text| text.lines().count())
    }
}

impl Default for Effects {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Effects {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A handle on `store` in the checkout's namespace.
pub fn handle(store: Arc<dyn Store>) -> Idempotency {
    Idempotency::from_arc(store).with_namespace(NAMESPACE)
}

/// The call of `order`'s checkout.
pub fn call(idem: &Idempotency, order: &str) -> Call {
    let key = idem
        .key("shop.checkout")
        .part(order)
        .finish()
        .expect("a short key");
    Call::new(key, Fingerprint::of(&(order, 1_000)).expect("plain values"))
        .with_lease(LEASE)
        .with_wait(WAIT)
}

/// Checks out `order`: charges (step `charge`), awaits `after_charge`, then books the ledger
/// (step `ledger`). Returns the charge and the ledger entry, and the attempt that ran.
pub async fn checkout<F>(
    idem: &Idempotency,
    order: &str,
    effects: &Effects,
    after_charge: F,
) -> Result<Answered<(String, u64, u32)>, Error>
where
    F: std::future::Future<Output = ()>,
{
    idem.run(call(idem, order), async {
        let attempt = idem_core::context().map_or(0, |context| context.attempt());
        let charge = step("charge", async {
            Ok::<_, Error>(format!("ch_{}", effects.run("charge")))
        })
        .await?;
        after_charge.await;
        let entry = step("ledger", async {
            Ok::<_, Error>(effects.run("ledger") as u64)
        })
        .await?;
        Ok((charge, entry, attempt))
    })
    .await
}

/// Runs `child` (the `checkout_child` binary with its arguments), waits until it says its
/// charge is recorded, and kills it with SIGKILL.
pub fn kill_after_the_charge(mut child: Command) {
    let mut child = child
        .stdout(Stdio::piped())
        .spawn()
        .expect("the checkout child starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let said = lines.next().transpose().expect("the child's stdout reads");
    if said.as_deref() != Some(CHARGED) {
        let _ = child.kill();
        let status = child.wait().expect("the child is reaped");
        panic!("the checkout child said {said:?} instead of `{CHARGED}`, and exited {status}");
    }
    // `Child::kill` is SIGKILL on Unix: no destructor, no release, no lease renewal after it.
    child.kill().expect("the child is killed");
    child.wait().expect("the child is reaped");
}

/// The whole story on `store`: `child` is killed after its charge; the record keeps the charge;
/// the parent's retry takes over after the lease and resumes; a replay returns the outcome.
pub async fn resumes_after_a_kill(
    store: Arc<dyn Store>,
    order: &str,
    effects: &Effects,
    child: Command,
) {
    let idem = handle(store.clone());
    kill_after_the_charge(child);
    assert_eq!(effects.count("charge"), 1, "the child charged once");
    assert_eq!(effects.count("ledger"), 0, "the child died before booking");
    let key = call(&idem, order).key().clone();
    match store.get(&key).await.expect("the store answers") {
        Some(Record::InProgress(held)) => assert_eq!(
            held.steps().get("charge"),
            Some(&br#""ch_1""#[..]),
            "the dead child's record holds its charge"
        ),
        other => panic!("expected the dead child's in-progress record, found {other:?}"),
    }
    let resumed = checkout(&idem, order, effects, async {})
        .await
        .expect("the retry takes over once the lease passed, and resumes");
    assert!(!resumed.replayed);
    assert_eq!(
        resumed.value,
        ("ch_1".to_string(), 1, 2),
        "the charge comes from the record, the booking runs, as attempt 2"
    );
    assert_eq!(
        effects.count("charge"),
        1,
        "the charge ran again after the crash"
    );
    assert_eq!(effects.count("ledger"), 1);
    assert!(
        matches!(
            store.get(&key).await.expect("the store answers"),
            Some(Record::Completed(_))
        ),
        "the outcome is stored"
    );
    let replayed = checkout(&idem, order, effects, async {})
        .await
        .expect("a replay");
    assert!(replayed.replayed);
    assert_eq!(replayed.value, resumed.value);
}

/// The child's side: checks out `order` and, once the charge is recorded, says so on stdout
/// and waits to be killed.
pub async fn run_child(store: Arc<dyn Store>, order: &str, effects: &Effects) -> Result<(), Error> {
    let idem = handle(store);
    checkout(&idem, order, effects, async {
        println!("{CHARGED}");
        std::io::stdout().flush().expect("stdout flushes");
        std::future::pending::<()>().await;
    })
    .await
    .map(drop)
}

/// An order id no other test uses.
pub fn unique_order() -> String {
    format!(
        "order-{}",
        idem_core::store::OwnerToken::generate().as_str()
    )
}
