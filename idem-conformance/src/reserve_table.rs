//! The reserve cases: every record a reservation may find, a claim and a time, and what the
//! store must decide, as one table; and, as its lookup column, what a lookup at the claim's
//! time may answer.
//!
//! The table is checked against idem-core's
//! [`judge_reserve`](idem_core::store::judge_reserve) and against every store,
//! including the decisions a backend takes on its own side (a Redis script, an SQL statement,
//! a DynamoDB condition). A store of your own runs it with [`check_reserve_cases`]:
//!
//! ```ignore
//! #[tokio::test]
//! async fn my_store_decides_every_reserve_case() {
//!     idem_conformance::check_reserve_cases(Arc::new(MyStore::connect().await)).await;
//! }
//! ```

use std::sync::Arc;
use std::time::Duration;

use idem_core::store::ReserveJudgement;
use idem_core::{
    store::{
        Claim, Completed, InProgress, Lookup, Outcome, OwnerToken, Probe, Record, Reservation,
        Steps, Store, Timestamp, LEASE_GRACE,
    },
    Clock, Fingerprint, Idempotency, Key, SystemClock,
};

/// The lease of every planted in-progress record and of every claim.
const LEASE: Duration = Duration::from_secs(30);
/// How long a planted completed record is replayed.
const TTL: Duration = Duration::from_secs(60 * 60);
const SECOND: Duration = Duration::from_secs(1);

/// One row of the table: the record a key holds, the claim that arrives, and what reserving
/// must decide.
#[derive(Clone, Debug)]
pub struct ReserveCase {
    name: &'static str,
    planted_at: Timestamp,
    found: Option<Record>,
    claim: Claim,
    expected: ReserveJudgement,
}

impl ReserveCase {
    /// The case's name, which says what it shows.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The record the key holds when the claim arrives; `None` for no record.
    pub fn found(&self) -> Option<&Record> {
        self.found.as_ref()
    }

    /// When the found record was written: the time of the claim that
    /// [`plant`](ReserveCase::plant) sends. The claim arrives at this time or later.
    pub fn planted_at(&self) -> Timestamp {
        self.planted_at
    }

    /// The claim, with its time ([`Claim::now`]).
    pub fn claim(&self) -> &Claim {
        &self.claim
    }

    /// What reserving must decide.
    pub fn expected(&self) -> &ReserveJudgement {
        &self.expected
    }

    /// What [`Store::reserve`] must answer.
    pub fn expected_reservation(&self) -> Reservation {
        self.expected.clone().into_reservation(&self.claim)
    }

    /// The lookup of the key at the claim's time and limit, before the claim arrives.
    pub fn probe(&self) -> Probe {
        Probe::new(self.claim.now()).with_max_outcome(self.claim.max_outcome())
    }

    /// What [`Store::lookup`] with the case's [`probe`](ReserveCase::probe) answers, when the
    /// store looks records up: the found record exactly when the judgement is a live completed
    /// record that stands ([`ReserveJudgement::Existing`]), else [`Lookup::Miss`]. A store
    /// that does not look up misses every case.
    pub fn expected_lookup(&self) -> Lookup {
        match &self.expected {
            ReserveJudgement::Existing(Record::Completed(done)) => Lookup::Completed(done.clone()),
            _ => Lookup::Miss,
        }
    }

    /// The record the key must hold after the reservation: the one written, or the one found.
    pub fn expected_record(&self) -> Option<Record> {
        match self.expected.record_to_write(&self.claim) {
            Some(written) => Some(Record::InProgress(written)),
            None => self.found.clone(),
        }
    }

    /// Makes `store` hold [`found`](ReserveCase::found) under `key`, an empty key, by driving
    /// it through the [`Store`] contract as callers would: a reservation at
    /// [`planted_at`](ReserveCase::planted_at), then the steps, and a release or a completion.
    /// Checks that the store then holds exactly that record.
    ///
    /// # Panics
    ///
    /// When the store refuses a write or holds another record afterwards.
    pub async fn plant(&self, store: &dyn Store, key: &Key) {
        let name = self.name;
        let (owner, record) = match &self.found {
            None => return,
            Some(Record::InProgress(held)) => {
                let lease_until = if held.is_released() {
                    self.planted_at + LEASE
                } else {
                    held.lease_until()
                };
                let record =
                    InProgress::new(held.owner().clone(), *held.fingerprint(), lease_until)
                        .with_fencing_token(held.fencing_token())
                        .with_attempt(held.attempt());
                (held.owner().clone(), record)
            }
            Some(Record::Completed(done)) => {
                let owner = OwnerToken::generate();
                let record =
                    InProgress::new(owner.clone(), *done.fingerprint(), self.planted_at + LEASE)
                        .with_fencing_token(fencing_token(self.planted_at));
                (owner, record)
            }
            Some(other) => panic!("case `{name}`: no way to plant {other:?}"),
        };
        let planted = store
            .reserve(key, &Claim::new(record.clone(), self.planted_at))
            .await
            .unwrap_or_else(|error| panic!("case `{name}`: planting: reserve failed: {error}"));
        assert_eq!(
            planted,
            Reservation::Reserved(record),
            "case `{name}`: planting on an empty key"
        );
        match &self.found {
            Some(Record::InProgress(held)) => {
                for (step, value) in held.steps().iter() {
                    store
                        .record_step(key, &owner, step, value, held.steps().kept_until())
                        .await
                        .unwrap_or_else(|error| {
                            panic!("case `{name}`: planting: record_step failed: {error}")
                        });
                }
                if held.is_released() {
                    store.release(key, &owner).await.unwrap_or_else(|error| {
                        panic!("case `{name}`: planting: release failed: {error}")
                    });
                }
            }
            Some(Record::Completed(done)) => {
                store
                    .complete(key, &owner, done)
                    .await
                    .unwrap_or_else(|error| {
                        panic!("case `{name}`: planting: complete failed: {error}")
                    });
            }
            _ => {}
        }
        let held = store
            .get(key)
            .await
            .unwrap_or_else(|error| panic!("case `{name}`: planting: get failed: {error}"));
        assert_eq!(held, self.found, "case `{name}`: the planted record");
    }

    /// Plants the case's record under `key` (an empty key), looks it up (a miss, or
    /// [`expected_lookup`](ReserveCase::expected_lookup)), reserves with its claim, and checks
    /// the answer and the record the key holds afterwards: the lookup wrote nothing the
    /// reservation would see.
    ///
    /// # Panics
    ///
    /// When the store decides otherwise, naming the case.
    pub async fn check(&self, store: &dyn Store, key: &Key) {
        let name = self.name;
        self.plant(store, key).await;
        let looked = store
            .lookup(key, &self.probe())
            .unwrap_or_else(|error| panic!("case `{name}`: lookup failed: {error}"));
        assert!(
            looked == Lookup::Miss || looked == self.expected_lookup(),
            "case `{name}`: the lookup answers {looked:?}, where it may answer only {:?} or miss",
            self.expected_lookup()
        );
        let answer = store
            .reserve(key, &self.claim)
            .await
            .unwrap_or_else(|error| panic!("case `{name}`: reserve failed: {error}"));
        assert_eq!(answer, self.expected_reservation(), "case `{name}`: answer");
        let held = store
            .get(key)
            .await
            .unwrap_or_else(|error| panic!("case `{name}`: get failed: {error}"));
        assert_eq!(
            held,
            self.expected_record(),
            "case `{name}`: the record kept"
        );
    }
}

/// Runs every case of [`reserve_cases`] against `store`, each on a key of its own in a fresh
/// namespace.
///
/// # Panics
///
/// On the first case the store decides otherwise, naming it.
pub async fn check_reserve_cases(store: Arc<dyn Store>) {
    let handle = Idempotency::from_arc(store.clone())
        .with_namespace(format!("reserve-cases-{}", OwnerToken::generate().as_str()));
    for case in reserve_cases() {
        let key = handle
            .key(case.name())
            .finish()
            .expect("case names are valid keys");
        case.check(&*store, &key).await;
    }
}

/// A fencing token as a claim at `now` proposes one: a thousand per millisecond.
fn fencing_token(now: Timestamp) -> u64 {
    now.as_millis() * 1_000
}

/// Builds the cases around one time.
struct Table {
    /// When every found record was written.
    at: Timestamp,
    ours: Fingerprint,
    theirs: Fingerprint,
}

impl Table {
    /// Another owner's reservation for `fingerprint`, written at the table's time.
    fn held(&self, fingerprint: Fingerprint) -> InProgress {
        InProgress::new(OwnerToken::generate(), fingerprint, self.at + LEASE)
            .with_fencing_token(fencing_token(self.at))
    }

    fn completed(&self, fingerprint: Fingerprint) -> Completed {
        let body = format!("\"{}\"", fingerprint.to_hex()).into_bytes();
        Completed::new(fingerprint, Outcome::ok(body), self.at + TTL)
    }

    /// A claim for the table's own fingerprint at `now`, by a new owner.
    fn claim(&self, now: Timestamp) -> Claim {
        self.claim_by(OwnerToken::generate(), now)
    }

    fn claim_by(&self, owner: OwnerToken, now: Timestamp) -> Claim {
        let record =
            InProgress::new(owner, self.ours, now + LEASE).with_fencing_token(fencing_token(now));
        Claim::new(record, now)
    }

    fn steps(&self, kept_until: Timestamp) -> Steps {
        Steps::new()
            .with_step("charge", b"\"ch_1\"".to_vec())
            .with_step("email", b"true".to_vec())
            .with_kept_until(kept_until)
    }

    fn case(
        &self,
        name: &'static str,
        found: Option<Record>,
        claim: Claim,
        expected: ReserveJudgement,
    ) -> ReserveCase {
        ReserveCase {
            name,
            planted_at: self.at,
            found,
            claim,
            expected,
        }
    }
}

/// Every case of the reserve judgement, around the current time: no record; a completed
/// record live or expired, with the claim's fingerprint or another; another owner's
/// reservation live, past its lease, past the lease grace, with steps that still hold the key
/// or no longer do, released; the claimant's own reservation sent again; and the boundaries,
/// where a record stops counting exactly at `now`.
pub fn reserve_cases() -> Vec<ReserveCase> {
    let t = Table {
        at: SystemClock.now(),
        ours: Fingerprint::of(&"the claim's arguments").expect("a string serialises"),
        theirs: Fingerprint::of(&"other arguments").expect("a string serialises"),
    };
    let at = t.at;
    let completed = |fingerprint| Record::Completed(t.completed(fingerprint));
    let held = |record: &InProgress| Some(Record::InProgress(record.clone()));
    let mut cases = vec![
        t.case(
            "no_record_is_vacant",
            None,
            t.claim(at),
            ReserveJudgement::Vacant,
        ),
        t.case(
            "a_live_completed_record_of_the_same_call_is_replayed",
            Some(completed(t.ours)),
            t.claim(at + SECOND),
            ReserveJudgement::Existing(completed(t.ours)),
        ),
        t.case(
            "a_live_completed_record_of_another_call_stands_as_a_mismatch",
            Some(completed(t.theirs)),
            t.claim(at + SECOND),
            ReserveJudgement::Existing(completed(t.theirs)),
        ),
        t.case(
            "a_completed_record_past_its_expiry_is_reused",
            Some(completed(t.ours)),
            t.claim(at + TTL + SECOND),
            ReserveJudgement::Expired(t.completed(t.ours)),
        ),
        t.case(
            "a_completed_record_of_another_call_past_its_expiry_is_reused",
            Some(completed(t.theirs)),
            t.claim(at + TTL * 2),
            ReserveJudgement::Expired(t.completed(t.theirs)),
        ),
        t.case(
            "a_completed_record_a_millisecond_before_its_expiry_is_replayed",
            Some(completed(t.ours)),
            t.claim(at + TTL - Duration::from_millis(1)),
            ReserveJudgement::Existing(completed(t.ours)),
        ),
        t.case(
            "a_completed_record_at_its_expiry_is_reused",
            Some(completed(t.theirs)),
            t.claim(at + TTL),
            ReserveJudgement::Expired(t.completed(t.theirs)),
        ),
    ];

    let other = t.held(t.ours);
    cases.push(t.case(
        "a_live_reservation_of_the_same_call_is_in_progress",
        held(&other),
        t.claim(at + SECOND),
        ReserveJudgement::Existing(Record::InProgress(other.clone())),
    ));
    let other = t.held(t.theirs);
    cases.push(t.case(
        "a_live_reservation_of_another_call_is_in_progress",
        held(&other),
        t.claim(at + LEASE - Duration::from_millis(1)),
        ReserveJudgement::Existing(Record::InProgress(other.clone())),
    ));

    let own = t.held(t.ours);
    cases.push(t.case(
        "the_claimants_own_reservation_sent_again_is_its_own",
        held(&own),
        t.claim_by(own.owner().clone(), at + SECOND),
        ReserveJudgement::Held(own.clone()),
    ));
    let own = t.held(t.ours);
    cases.push(t.case(
        "the_claimants_own_reservation_past_its_grace_is_still_its_own",
        held(&own),
        t.claim_by(own.owner().clone(), at + LEASE + LEASE_GRACE * 2),
        ReserveJudgement::Held(own.clone()),
    ));

    let stale = t.held(t.ours);
    cases.push(t.case(
        "the_same_call_past_the_lease_is_taken_over",
        held(&stale),
        t.claim(at + LEASE + SECOND),
        ReserveJudgement::TakeOver(stale.clone()),
    ));
    let live = t.held(t.ours);
    cases.push(t.case(
        "the_same_call_a_millisecond_before_the_lease_end_is_in_progress",
        held(&live),
        t.claim(at + LEASE - Duration::from_millis(1)),
        ReserveJudgement::Existing(Record::InProgress(live.clone())),
    ));
    let stale = t.held(t.ours);
    cases.push(t.case(
        "the_same_call_at_the_lease_end_is_taken_over",
        held(&stale),
        t.claim(at + LEASE),
        ReserveJudgement::TakeOver(stale.clone()),
    ));
    let stale = t
        .held(t.ours)
        .with_steps(t.steps(at + LEASE + LEASE_GRACE * 10));
    cases.push(t.case(
        "the_same_call_past_the_lease_takes_its_steps_over",
        held(&stale),
        t.claim(at + LEASE + SECOND),
        ReserveJudgement::TakeOver(stale.clone()),
    ));
    let fast = InProgress::new(OwnerToken::generate(), t.ours, at + LEASE)
        .with_fencing_token(fencing_token(at + TTL));
    cases.push(t.case(
        "a_takeover_fences_above_a_previous_token_larger_than_its_own",
        held(&fast),
        t.claim(at + LEASE + SECOND),
        ReserveJudgement::TakeOver(fast.clone()),
    ));

    let stale = t.held(t.theirs);
    cases.push(t.case(
        "another_call_past_the_lease_within_the_grace_stands",
        held(&stale),
        t.claim(at + LEASE + LEASE_GRACE - Duration::from_millis(1)),
        ReserveJudgement::Existing(Record::InProgress(stale.clone())),
    ));
    let stale = t.held(t.theirs);
    cases.push(t.case(
        "another_call_at_the_grace_end_is_abandoned_and_taken_over",
        held(&stale),
        t.claim(at + LEASE + LEASE_GRACE),
        ReserveJudgement::TakeOver(stale.clone()),
    ));
    let stale = t.held(t.theirs);
    cases.push(t.case(
        "another_call_past_the_grace_is_abandoned_and_taken_over",
        held(&stale),
        t.claim(at + LEASE + LEASE_GRACE + SECOND),
        ReserveJudgement::TakeOver(stale.clone()),
    ));
    let kept = t
        .held(t.theirs)
        .with_steps(t.steps(at + LEASE + LEASE_GRACE * 10));
    cases.push(t.case(
        "another_call_past_the_grace_whose_steps_hold_the_key_stands",
        held(&kept),
        t.claim(at + LEASE + LEASE_GRACE * 2),
        ReserveJudgement::Existing(Record::InProgress(kept.clone())),
    ));
    let expired = t.held(t.theirs).with_steps(t.steps(at + LEASE + SECOND));
    cases.push(t.case(
        "another_call_past_the_grace_whose_steps_expired_is_taken_over",
        held(&expired),
        t.claim(at + LEASE + LEASE_GRACE * 2),
        ReserveJudgement::TakeOver(expired.clone()),
    ));

    let released = t
        .held(t.ours)
        .with_steps(t.steps(at + LEASE + LEASE_GRACE * 10))
        .released();
    cases.push(t.case(
        "a_released_reservation_is_taken_over_at_once_by_the_same_call",
        held(&released),
        t.claim(at + SECOND),
        ReserveJudgement::TakeOver(released.clone()),
    ));
    let released = t
        .held(t.theirs)
        .with_steps(t.steps(at + LEASE + LEASE_GRACE * 10))
        .released();
    cases.push(t.case(
        "a_released_reservation_of_another_call_stands_while_its_steps_hold_the_key",
        held(&released),
        t.claim(at + SECOND),
        ReserveJudgement::Existing(Record::InProgress(released.clone())),
    ));
    let released = t
        .held(t.theirs)
        .with_steps(t.steps(at + LEASE + SECOND))
        .released();
    cases.push(t.case(
        "a_released_reservation_of_another_call_whose_steps_expired_is_taken_over",
        held(&released),
        t.claim(at + LEASE + SECOND * 2),
        ReserveJudgement::TakeOver(released.clone()),
    ));
    cases
}
