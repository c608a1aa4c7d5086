//! The attribute names of a record item.

/// The names of the attributes a [`DynamoDbStore`](super::DynamoDbStore) writes.
///
/// The defaults suit a table made by [`create_table`](super::DynamoDbStore::create_table); change
/// them to share a table whose partition key or TTL attribute is named otherwise. Every request
/// refers to attributes through expression attribute names, so DynamoDB's reserved words are
/// fine here.
///
/// ```
/// use idem_stores::dynamodb::AttributeNames;
/// let names = AttributeNames {
///     key: "PK".into(),
///     ttl: "expires".into(),
///     ..AttributeNames::default()
/// };
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttributeNames {
    /// The partition key (string): the store's key prefix followed by the idempotency key.
    /// Default `pk`.
    pub key: String,
    /// The record's state (string): `in_progress` or `completed`. Default `state`.
    pub state: String,
    /// The owner token of an in-progress record, or of the owner that completed a completed one
    /// (string). Default `owner`.
    pub owner: String,
    /// The arguments' fingerprint (string, 64 lower-case hex digits). Default `fingerprint`.
    pub fingerprint: String,
    /// Until when the record counts, in milliseconds since the Unix epoch (number): the lease
    /// deadline of an in-progress record, the expiry of a completed one. Checked by idem on every
    /// read and in every conditional write. Default `live_until_ms`.
    pub live_until: String,
    /// The fencing token of an in-progress record (number). Default `fencing_token`.
    pub fencing_token: String,
    /// The attempt of an in-progress record: 1, one more per takeover by the same call
    /// (number). Default `attempt`.
    pub attempt: String,
    /// The same instant in whole seconds, rounded up (number), for DynamoDB's TTL sweeper, which
    /// only cleans up: it may run days late. Default `ttl`.
    pub ttl: String,
    /// Whether a completed call returned `ok`, a stored `err`, or was `aborted` (string).
    /// Default `outcome`.
    pub outcome: String,
    /// The serialised value of a completed call: a string holding its JSON, or binary for a
    /// value that is not UTF-8; absent for an aborted call. Default `body`.
    pub body: String,
    /// The recorded steps of an in-progress record (map): each step's serialised value
    /// (binary, byte for byte) under the step's name. Written empty at reservation, so that a
    /// step is one update of an element. Default `steps`.
    pub steps: String,
    /// Until when the recorded steps hold the key, in milliseconds since the Unix epoch
    /// (number): the latest of the instants the steps were recorded with. Present once a step
    /// is recorded. Default `steps_kept_until_ms`.
    pub steps_kept_until: String,
    /// The same instant in whole seconds, rounded up (number): the floor below which `ttl`
    /// must not go while the steps are kept, read by renewals inside their update. Present
    /// once a step is recorded. Default `steps_ttl`.
    pub steps_ttl: String,
}

impl Default for AttributeNames {
    fn default() -> Self {
        AttributeNames {
            key: "pk".into(),
            state: "state".into(),
            owner: "owner".into(),
            fingerprint: "fingerprint".into(),
            live_until: "live_until_ms".into(),
            fencing_token: "fencing_token".into(),
            attempt: "attempt".into(),
            ttl: "ttl".into(),
            outcome: "outcome".into(),
            body: "body".into(),
            steps: "steps".into(),
            steps_kept_until: "steps_kept_until_ms".into(),
            steps_ttl: "steps_ttl".into(),
        }
    }
}
