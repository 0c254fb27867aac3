//! Search over real text: stores pieces of this machine's text files as
//! memories with concurrent raw puts, times how long the background indexer
//! takes to catch up (the index throughput), then times sequential
//! `GET /v1/search` requests of several kinds over one keep-alive connection.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::api::Api;
use crate::procfs::{CpuMeter, CpuUse};

mod ask;
mod load;
mod pieces;
mod queries;

use ask::search_all;
use load::{paced_puts, put_client, wait_for_index};
pub use pieces::pieces;
pub use queries::queries;

/// Smallest piece of a file made a memory: smaller files are left out.
pub const MIN_PIECE: usize = 4 << 10;
/// Largest piece: longer files are cut, at line ends, into near-equal pieces.
pub const MAX_PIECE: usize = 16 << 10;
/// Results asked of every search.
pub const LIMIT: u32 = 10;
/// Shortest pause between two looks at `/v1/stats` (how far the indexer is behind).
pub const POLL: Duration = Duration::from_millis(50);
/// A look at `/v1/stats` is followed by a pause of at least this many times
/// its own duration, so that the server spends at most about a tenth of its
/// time answering them.
pub const POLL_SHARE: u32 = 9;
/// How long the indexer may take to catch up before the measure gives up.
const INDEX_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// "Common" words: this many of the words found in the most memories.
const COMMON_WORDS: usize = 100;
/// "Rare" words are found in at least this many memories…
const RARE_MIN_MEMORIES: u32 = 2;
/// …and at most this many.
const RARE_MAX_MEMORIES: u32 = 5;
/// Characters a prefix query keeps of its word.
const PREFIX_CHARS: usize = 4;
/// Error messages kept for the report.
const KEPT_ERRORS: usize = 5;
/// Example queries kept per kind for the report.
const KEPT_EXAMPLES: usize = 3;

/// The kinds of query, asked in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryKind {
    /// One of the words found in the most memories.
    CommonWord,
    /// A word found in only a few memories.
    RareWord,
    /// Two words of one memory (implicitly AND-ed).
    TwoWords,
    /// Two or three consecutive words of one memory, quoted.
    Phrase,
    /// The first characters of a word of one memory, then `*`.
    Prefix,
}

impl QueryKind {
    /// Every kind, in the order queries take turns.
    pub const ALL: [Self; 5] = [
        Self::CommonWord,
        Self::RareWord,
        Self::TwoWords,
        Self::Phrase,
        Self::Prefix,
    ];

    /// Its short name.
    pub fn name(self) -> &'static str {
        match self {
            Self::CommonWord => "common word",
            Self::RareWord => "rare word",
            Self::TwoWords => "two words",
            Self::Phrase => "phrase",
            Self::Prefix => "prefix",
        }
    }

    /// What the kind is, for the report.
    pub fn describe(self) -> String {
        match self {
            Self::CommonWord => {
                format!("common word (one of the {COMMON_WORDS} in the most memories)")
            }
            Self::RareWord => {
                format!("rare word (in {RARE_MIN_MEMORIES}–{RARE_MAX_MEMORIES} memories)")
            }
            Self::TwoWords => "two words of one memory (AND)".to_owned(),
            Self::Phrase => "quoted phrase of 2–3 words of one memory".to_owned(),
            Self::Prefix => format!("prefix (first {PREFIX_CHARS} letters of a word, then `*`)"),
        }
    }
}

/// How much to store and ask.
#[derive(Clone, Copy, Debug)]
pub struct SearchLoad {
    /// Memories to store.
    pub memories: usize,
    /// Concurrent put clients.
    pub clients: usize,
    /// Searches before measuring.
    pub warmup: usize,
    /// Measured searches.
    pub searches: usize,
    /// Seed of the query choice.
    pub seed: u64,
    /// Puts per second while the searches are measured a second time (0: not).
    pub put_rate: u32,
}

/// The memories to store: pieces of real text files, all distinct.
pub struct Pieces {
    /// Their texts, in the order they are put.
    pub texts: Vec<String>,
    /// Files they were cut from.
    pub files: usize,
    /// Where the files were found.
    pub sources: Vec<PathBuf>,
    /// Distinct pieces found in all (the stored ones are spread evenly over them).
    pub available: usize,
}

/// One measured search.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Its kind.
    pub kind: QueryKind,
    /// The query as sent.
    pub query: String,
    /// Request to the end of the answer body.
    pub latency: Duration,
    /// Results answered (0 for a failed request).
    pub results: usize,
    /// Asked while puts went on.
    pub loaded: bool,
}

/// What the search measure found.
#[derive(Debug, Default)]
pub struct Search {
    /// Memories stored.
    pub memories: usize,
    /// Their content bytes, as sent.
    pub bytes: u64,
    /// Smallest memory, bytes.
    pub smallest: usize,
    /// Largest memory, bytes.
    pub largest: usize,
    /// Files the memories were cut from.
    pub files: usize,
    /// Distinct pieces found on this machine.
    pub available: usize,
    /// Where the files were found.
    pub sources: Vec<PathBuf>,
    /// Concurrent put clients.
    pub clients: usize,
    /// Memories in the namespace before the puts (earlier measures' content).
    pub memories_before: u64,
    /// Time waited for the index to catch up with them first.
    pub waited_before: Duration,
    /// From the first put's start to the last put's answer.
    pub put_elapsed: Duration,
    /// Latency of each 201 put.
    pub put_latencies: Vec<Duration>,
    /// Puts not answered 201.
    pub put_errors: u64,
    /// From the first put's start to `/v1/stats` answering an empty index queue.
    pub indexed_after: Duration,
    /// From the last put's answer to that.
    pub catch_up: Duration,
    /// When `/v1/stats` answered an empty queue after the puts.
    pub caught_up: Option<Instant>,
    /// How early the queue may have emptied before that answer: back to the
    /// previous look (or the last put's answer).
    pub resolution: Duration,
    /// Looks at `/v1/stats` from the first put to the index caught up.
    pub polls: u32,
    /// Their total duration.
    pub poll_time: Duration,
    /// The queue at the first look after the last put answered: objects and bytes.
    pub pending_at_last_put: (u64, u64),
    /// The longest queue seen, bytes.
    pub peak_pending_bytes: u64,
    /// CPU from the first put to the index caught up.
    pub cpu: CpuUse,
    /// From the index caught up until the server went quiet (its background
    /// work after a bulk load, such as merging index segments, done), and
    /// whether it did within [`SETTLE_AT_MOST`].
    pub settled_after: Duration,
    /// The server went quiet before the idle round.
    pub settled: bool,
    /// Memories in the namespace when searching.
    pub memories_searched: u64,
    /// The measured searches, in order.
    pub samples: Vec<Sample>,
    /// Searches not answered 200 with JSON results.
    pub errors: u64,
    /// The first few put and search errors.
    pub error_samples: Vec<String>,
    /// A few queries of each kind, in the order of [`QueryKind::ALL`].
    pub examples: Vec<(QueryKind, Vec<String>)>,
    /// The puts that went on during the second round of searches.
    pub background: Option<Background>,
}

/// The puts going on while the searches were measured a second time.
#[derive(Debug, Default)]
pub struct Background {
    /// Rate asked, per second.
    pub rate: u32,
    /// Puts answered 201.
    pub done: u64,
    /// Puts not answered 201.
    pub errors: u64,
    /// From the first put to the last answer.
    pub elapsed: Duration,
    /// Latency of each 201 put.
    pub latencies: Vec<Duration>,
}

impl Search {
    fn error(&mut self, problem: String) {
        if self.error_samples.len() < KEPT_ERRORS {
            self.error_samples.push(problem);
        }
    }
}

/// Stores `pieces` with `load.clients` concurrent raw puts, waits for the
/// index to catch up, then runs `load.warmup` and `load.searches` sequential searches.
pub async fn run(api: &Api, pid: u32, pieces: Pieces, load: SearchLoad) -> anyhow::Result<Search> {
    let mut result = Search {
        memories: pieces.texts.len(),
        bytes: pieces.texts.iter().map(|t| t.len() as u64).sum(),
        smallest: pieces.texts.iter().map(String::len).min().unwrap_or(0),
        largest: pieces.texts.iter().map(String::len).max().unwrap_or(0),
        files: pieces.files,
        available: pieces.available,
        sources: pieces.sources,
        clients: load.clients,
        ..Search::default()
    };
    let texts = Arc::new(pieces.texts);
    let queries = {
        let texts = texts.clone();
        tokio::task::spawn_blocking(move || queries(&texts, load.warmup + load.searches, load.seed))
            .await
            .context("drawing the queries panicked")?
    };
    if queries.len() < load.warmup + load.searches {
        bail!(
            "could draw only {} queries from the memories' words",
            queries.len()
        );
    }
    for kind in QueryKind::ALL {
        let examples = queries[load.warmup..]
            .iter()
            .filter(|(k, _)| *k == kind)
            .take(KEPT_EXAMPLES)
            .map(|(_, q)| q.clone())
            .collect();
        result.examples.push((kind, examples));
    }

    // Earlier measures of a full run may have left content to index: let the
    // indexer finish it, so that the throughput is of these memories alone.
    let waited = Instant::now();
    result.memories_before = wait_for_index(api, &mut result, None).await?.memories;
    result.waited_before = waited.elapsed();
    (result.polls, result.poll_time, result.peak_pending_bytes) = (0, Duration::ZERO, 0);

    eprintln!(
        "search: putting {} memories ({:.1} MB of real text) with {} clients…",
        result.memories,
        result.bytes as f64 / 1e6,
        load.clients
    );
    let cpu = CpuMeter::start(pid)?;
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..load.clients)
        .map(|_| {
            let (api, texts, next) = (api.clone(), texts.clone(), next.clone());
            tokio::spawn(async move { put_client(&api, &texts, &next).await })
        })
        .collect();
    let puts = tokio::spawn(async move {
        let mut outcomes = Vec::with_capacity(clients.len());
        for client in clients {
            outcomes.push(client.await);
        }
        outcomes
    });
    let caught_up = wait_for_index(api, &mut result, Some((started, puts))).await?;
    result.indexed_after = result.caught_up.unwrap_or_else(Instant::now) - started;
    result.cpu = cpu.read()?;
    result.memories_searched = caught_up.memories;
    let settling = Instant::now();
    result.settled = settle(pid).await?;
    result.settled_after = settling.elapsed();

    eprintln!(
        "search: {} warm-up + {} measured searches…",
        load.warmup, load.searches
    );
    search_all(api, &queries, load.warmup, None, &mut result).await?;
    if load.put_rate > 0 {
        eprintln!(
            "search: the same searches again while {} puts/s go on…",
            load.put_rate
        );
        let stop = Arc::new(AtomicBool::new(false));
        let putting = tokio::spawn(paced_puts(
            api.clone(),
            texts.clone(),
            load.put_rate,
            stop.clone(),
        ));
        // Let the puts (and the indexer behind them) get going first.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let deadline = Instant::now() + LOADED_FOR;
        // No warm-up this time (the connection and caches are warm): on a
        // slow backend it would take the whole round.
        let searched =
            search_all(api, &queries[load.warmup..], 0, Some(deadline), &mut result).await;
        stop.store(true, Ordering::Relaxed);
        let (background, errors) = putting.await.context("the paced puts panicked")?;
        for error in errors {
            result.error(error);
        }
        result.background = Some(background);
        searched?;
    }
    Ok(result)
}

/// Longest the idle round waits for the server to go quiet.
pub const SETTLE_AT_MOST: Duration = Duration::from_secs(120);
/// Cores the server may keep busy and count as quiet.
const QUIET_CORES: f64 = 0.05;

/// Waits until the server keeps less than [`QUIET_CORES`] busy over a
/// second (the idle round measures an idle server), at most
/// [`SETTLE_AT_MOST`]; false when it never did.
async fn settle(pid: u32) -> anyhow::Result<bool> {
    let deadline = Instant::now() + SETTLE_AT_MOST;
    while Instant::now() < deadline {
        let meter = CpuMeter::start(pid)?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        if meter.read()?.server_cores < QUIET_CORES {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Longest the searches under puts go on: the puts grow the namespace
/// (500/s for 30 s is 15% more memories over 100,000).
pub const LOADED_FOR: Duration = Duration::from_secs(30);
