//! Rows of the exchange ledger: one proxied request each, with what the
//! model saw stored as a delta against the thread's previous exchange.

/// One recorded exchange.
#[derive(Clone, Debug, PartialEq)]
pub struct ExchangeRow {
    /// Sortable id (`ex_` + time + random), unique.
    pub id: String,
    /// Owning namespace.
    pub namespace: String,
    /// The conversation it belongs to.
    pub thread: String,
    /// `chat`, `responses` or `messages`.
    pub api: String,
    /// The model asked for.
    pub model: String,
    /// When it started, Unix milliseconds.
    pub at_ms: i64,
    /// The HTTP status the client got (0 when the client went away first).
    pub status: i64,
    /// The exchange whose upstream body this one's is a delta against.
    pub parent: Option<String>,
    /// Bytes taken from the start of the parent's body.
    pub prefix: i64,
    /// Bytes taken from the end of the parent's body.
    pub suffix: i64,
    /// The bytes between (the whole body without a parent). Empty when a
    /// list of exchanges was read.
    pub body: Vec<u8>,
    /// The exchange's figures, JSON text the domain writes and reads.
    pub figures: String,
}

/// Which exchanges to list, newest first.
#[derive(Clone, Debug, Default)]
pub struct ExchangeQuery {
    /// The namespace (always one).
    pub namespace: String,
    /// Only this thread.
    pub thread: Option<String>,
    /// Only this model.
    pub model: Option<String>,
    /// Only those at or after, Unix milliseconds.
    pub since_ms: Option<i64>,
    /// Only those before, Unix milliseconds.
    pub until_ms: Option<i64>,
    /// Only those with a smaller id (the paging cursor).
    pub before: Option<String>,
    /// At most this many.
    pub limit: u32,
}
