//! The exchange ledger: one record per proxied request — its thread, API
//! and model; the tokens the client sent and those that went upstream; the
//! pieces offloaded; each round's usage and the retrievals the model made
//! through Cairn's tools; the billed cost and the counterfactual cost of the
//! same request sent untouched ([`cost`]); skips and how it ended — with the
//! body the model saw, stored as a delta against the thread's previous
//! exchange ([`body`], [`threads`]). Records are queued in the [`Ledger`]
//! and written with its batches; reads flush it first.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::Provider;
use super::first_offload::FirstOffload;
use super::govern_cost::GovernDecision;
use crate::clock::now_ms;
use crate::domain::DomainError;
use crate::domain::ledger::Ledger;
use crate::storage::meta::{ExchangeQuery, ExchangeRow, LedgerStore};

pub mod body;
pub mod cost;
pub mod sessions;
mod threads;
mod trace;

pub use cost::Counterfactual;
pub use trace::{Ended, Started, Trace};

/// Request bodies the ledger holds in memory to store the next one as a
/// delta, unless configured ([`ExchangeLedger::with_thread_cache`];
/// `CAIRN_EXCHANGES_CACHE_BYTES` defaults to it).
pub const THREAD_BYTES: u64 = 8 << 20;

/// Longest a read waits for exchanges being settled.
const SETTLE_WAIT: Duration = Duration::from_secs(2);

/// How often expired exchanges are removed.
const EXPIRY_PERIOD_MS: i64 = 60 * 60 * 1_000;

/// A piece Cairn took out of the request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Piece {
    /// The memory holding it (`mem://<id>` gets it back).
    pub memory_id: String,
    /// Its tokens.
    pub tokens: u64,
    /// Index of its message in the conversation as Cairn read it.
    pub message: usize,
    /// True when the governor's tier took it (not the offload threshold).
    pub governed: bool,
}

/// A call the model made to one of Cairn's tools in a hidden round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Retrieval {
    /// `memory_fetch`, `memory_grep` or `memory_search`.
    pub tool: String,
    /// What it asked for: the pointer, memory id or query.
    pub target: Option<String>,
    /// Bytes of the answer handed to the model.
    pub bytes: u64,
    /// Tokens of that answer.
    pub tokens: u64,
    /// True when the call failed (the model was told why).
    pub error: bool,
}

/// One upstream call of the exchange.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RoundFigures {
    /// The model that answered.
    pub model: String,
    /// Input tokens, cached ones included (the upstream's count).
    pub input: u64,
    /// Of those, read from the prompt cache.
    pub cache_read: u64,
    /// Of those, written to the prompt cache.
    pub cache_write: u64,
    /// Output tokens.
    pub output: u64,
    /// USD at list prices.
    pub usd: f64,
    /// Cairn's tools the model called in this round (answered by Cairn, then the upstream asked again).
    pub retrievals: Vec<Retrieval>,
}

/// What the ledger records of one exchange.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Figures {
    /// True for a streamed answer.
    pub streamed: bool,
    /// `answered`, `upstream_error` (the upstream's error went to the
    /// client), `failed: …` (Cairn answered an error), `cut: …` (the stream
    /// ended early), `refused: …` (the upstream refused a retrieval round),
    /// `client_gone`.
    pub outcome: String,
    /// From the request's arrival to the answer's end, in milliseconds.
    pub latency_ms: u64,
    /// Of that, the time Cairn spent besides waiting for the upstream.
    pub added_ms: f64,
    /// Tokens of the request as the client sent it.
    pub tokens_client: u64,
    /// Tokens of the request as it went upstream (before Cairn's tools were added).
    pub tokens_upstream: u64,
    /// How tokens were counted (exact encoding, or an estimate, with calibration).
    pub token_method: String,
    /// The governor's tier.
    pub tier: String,
    /// The governor's decision on a rewrite beyond offload, when its tier
    /// asked for one: made or not, and the modelled cost and saving.
    pub governor: Option<GovernDecision>,
    /// The decision on the conversation's first offload, when the request
    /// held texts to offload but no pointer yet (Cairn's tools would be new
    /// to it): from which message texts were offloaded, if any, and the
    /// modelled cost of the cache it breaks against the saving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_offload: Option<FirstOffload>,
    /// The pieces this request took out that the thread's previous request
    /// had not (a conversation's older pieces, replaced again by the same
    /// markers, are counted in `pieces_carried`).
    pub pieces: Vec<Piece>,
    /// Pieces taken out again as in the thread's previous request.
    pub pieces_carried: usize,
    /// Their tokens.
    pub tokens_carried: u64,
    /// Cairn's tools added to the request.
    pub tools_added: Vec<String>,
    /// Each upstream call, in order.
    pub rounds: Vec<RoundFigures>,
    /// Tokens the model fetched back through Cairn's tools.
    pub fetched_tokens: u64,
    /// USD of all rounds at list prices.
    pub billed_usd: f64,
    /// The same request sent untouched.
    pub counterfactual: Counterfactual,
    /// The price table entry applied.
    pub price_entry: String,
    /// Why the request went upstream unchanged, if it did.
    pub skipped: Option<String>,
}

/// One exchange as the ledger answers it.
#[derive(Clone, Debug, PartialEq)]
pub struct ExchangeRecord {
    /// Sortable id.
    pub id: String,
    /// The conversation it belongs to.
    pub thread: String,
    /// `chat_completions`, `responses` or `messages`.
    pub api: String,
    /// The model asked for.
    pub model: String,
    /// When it started, Unix milliseconds.
    pub at_ms: i64,
    /// The HTTP status the client got.
    pub status: u16,
    /// What happened.
    pub figures: Figures,
}

/// One exchange with the body the model saw.
pub struct ExchangeDetail {
    /// The record.
    pub record: ExchangeRecord,
    /// The first round's upstream body, byte for byte; `None` when an
    /// earlier exchange of its thread it was stored against has expired.
    pub body: Option<Vec<u8>>,
}

/// Which exchanges to list.
#[derive(Clone, Debug, Default)]
pub struct ExchangeFilter {
    /// Only this thread.
    pub thread: Option<String>,
    /// Only this model.
    pub model: Option<String>,
    /// Only at or after, Unix milliseconds.
    pub since_ms: Option<i64>,
    /// Only before, Unix milliseconds.
    pub until_ms: Option<i64>,
}

/// The exchange ledger service.
pub struct ExchangeLedger {
    ledger: Arc<Ledger>,
    store: Arc<dyn LedgerStore>,
    threads: threads::Threads,
    /// Secrets in the stored bodies are replaced as in stored content.
    redact: bool,
    /// False: nothing is recorded.
    on: bool,
    keep: Option<Duration>,
    last_expiry: AtomicI64,
    /// Exchanges finished and not yet settled.
    settling: AtomicUsize,
}

impl ExchangeLedger {
    /// Records into `ledger`'s batches and reads from `store`; exchanges are
    /// kept for `keep` (for ever when `None`).
    pub fn new(ledger: Arc<Ledger>, store: Arc<dyn LedgerStore>, keep: Option<Duration>) -> Self {
        Self {
            ledger,
            store,
            threads: threads::Threads::new(THREAD_BYTES),
            redact: false,
            on: true,
            keep,
            last_expiry: AtomicI64::new(0),
            settling: AtomicUsize::new(0),
        }
    }

    /// Holds at most `bytes` of request bodies in memory, so that a thread's
    /// next request is stored as what it appended (a thread whose last body
    /// was evicted stores its next one whole).
    #[must_use]
    pub fn with_thread_cache(mut self, bytes: u64) -> Self {
        self.threads = threads::Threads::new(bytes);
        self
    }

    /// Replaces secrets in the bodies it stores, as [`crate::domain::memories::Memories`]
    /// does in content (`CAIRN_REDACT`).
    #[must_use]
    pub fn with_redaction(mut self, on: bool) -> Self {
        self.redact = on;
        self
    }

    /// Records exchanges when `on` (the default), none otherwise.
    #[must_use]
    pub fn enabled(mut self, on: bool) -> Self {
        self.on = on;
        self
    }

    /// True when exchanges are recorded.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Starts the record of an exchange whose rewritten body goes upstream
    /// now; `None` when the ledger records nothing.
    pub fn begin(&self, started: Started<'_>) -> Option<Trace> {
        self.on.then(|| Trace::begin(started))
    }

    /// Finishes `trace`: it is settled — placed in its thread, priced, its
    /// counterfactual modelled, counted in the metrics — and queued for the
    /// next write, on a blocking thread (off the request's path).
    pub fn finish(self: &Arc<Self>, trace: Trace, ended: Ended) {
        self.settling.fetch_add(1, Ordering::SeqCst);
        let this = Arc::clone(self);
        let settle = move || {
            // Counted down however settling ends (a panic too), so reads never wait on it.
            let _settled = Settled(&this.settling);
            let done = trace.settle(&this.threads, this.ledger.pricing(), ended, this.redact);
            this.count(done.provider, &done.figures);
            this.ledger.queue_exchange(done.row);
            this.expire();
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(settle)),
            Err(_) => settle(),
        }
    }

    /// Waits (at most [`SETTLE_WAIT`]) for the exchanges being settled, so
    /// that a read sees every exchange that ended before it.
    async fn settled(&self) {
        let started = std::time::Instant::now();
        while self.settling.load(Ordering::SeqCst) > 0 && started.elapsed() < SETTLE_WAIT {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    fn count(&self, provider: Provider, figures: &Figures) {
        let metrics = &self.ledger.metrics().proxy;
        let provider = provider.name();
        metrics
            .cost_usd
            .with_label_values(&[provider, "billed"])
            .inc_by(figures.billed_usd);
        metrics
            .cost_usd
            .with_label_values(&[provider, "counterfactual"])
            .inc_by(figures.counterfactual.usd);
        let offloaded: u64 = figures.pieces.iter().map(|p| p.tokens).sum();
        metrics
            .offloaded_tokens
            .with_label_values(&[provider])
            .inc_by(offloaded);
        metrics
            .fetched_tokens
            .with_label_values(&[provider])
            .inc_by(figures.fetched_tokens);
    }

    /// Asks the ledger to remove expired threads, at most once an hour.
    fn expire(&self) {
        let Some(keep) = self.keep else {
            return;
        };
        let now = now_ms();
        let last = self.last_expiry.load(Ordering::Relaxed);
        if now - last < EXPIRY_PERIOD_MS {
            return;
        }
        self.last_expiry.store(now, Ordering::Relaxed);
        let keep_ms = i64::try_from(keep.as_millis()).unwrap_or(i64::MAX);
        self.ledger.expire_exchanges(now.saturating_sub(keep_ms));
    }

    /// A namespace's exchanges, newest first: at most `limit`, older than
    /// the exchange `before` when given.
    pub async fn list(
        &self,
        namespace: &str,
        filter: ExchangeFilter,
        before: Option<String>,
        limit: u32,
    ) -> Result<Vec<ExchangeRecord>, DomainError> {
        self.settled().await;
        self.ledger.flush().await?;
        let rows = self
            .store
            .exchanges(&ExchangeQuery {
                namespace: namespace.to_owned(),
                thread: filter.thread,
                model: filter.model,
                since_ms: filter.since_ms,
                until_ms: filter.until_ms,
                before,
                limit,
            })
            .await?;
        Ok(rows.into_iter().map(record).collect())
    }

    /// One exchange of a namespace with its body, rebuilt from its thread.
    pub async fn get(
        &self,
        namespace: &str,
        id: &str,
    ) -> Result<Option<ExchangeDetail>, DomainError> {
        self.settled().await;
        self.ledger.flush().await?;
        let Some(row) = self.store.exchange(namespace, id).await? else {
            return Ok(None);
        };
        let body = if row.parent.is_none() {
            Some(row.body.clone())
        } else {
            let chain = self
                .store
                .thread_exchanges(namespace, &row.thread, id)
                .await?;
            body::rebuild(chain, id)
        };
        Ok(Some(ExchangeDetail {
            record: record(row),
            body,
        }))
    }
}

/// Counts one settling exchange down when dropped.
struct Settled<'a>(&'a AtomicUsize);

impl Drop for Settled<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A stored row as a record (figures a later version cannot read come back empty).
fn record(row: ExchangeRow) -> ExchangeRecord {
    ExchangeRecord {
        figures: serde_json::from_str(&row.figures).unwrap_or_default(),
        id: row.id,
        thread: row.thread,
        api: row.api,
        model: row.model,
        at_ms: row.at_ms,
        status: u16::try_from(row.status).unwrap_or(0),
    }
}

/// The thread of a request: the client's own thread or session id, else
/// the conversation Cairn recognises by its opening.
pub fn thread_of(named: Option<&str>, opening: &[u8; 32]) -> String {
    match named {
        Some(name) => name.chars().take(200).collect(),
        None => format!("c-{}", hex::encode(&opening[..8])),
    }
}

/// What the model asked a tool for.
fn target_of(arguments: &Value) -> Option<String> {
    ["uri", "memory_id", "query", "pattern"]
        .iter()
        .find_map(|key| arguments[*key].as_str())
        .map(|s| s.chars().take(300).collect())
}
