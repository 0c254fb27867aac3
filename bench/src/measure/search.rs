//! Search over real text: stores pieces of this machine's text files as
//! memories with concurrent raw puts, times how long the background indexer
//! takes to catch up (the index throughput), then times sequential
//! `GET /v1/search` requests of several kinds over one keep-alive connection.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use reqwest::StatusCode;
use sha2::{Digest, Sha256};

use crate::api::{Api, json_body, snippet};
use crate::corpus;
use crate::generate::Rng;
use crate::procfs::{CpuMeter, CpuUse};

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

/// Cuts the text files under `roots` into pieces of [`MIN_PIECE`]–[`MAX_PIECE`]
/// bytes at line ends, drops repeated pieces, and keeps `count` of them spread
/// evenly over all (so that every part of the corpus is represented).
pub fn pieces(roots: &[PathBuf], count: usize) -> anyhow::Result<Pieces> {
    let mut seen = HashSet::new();
    let mut all: Vec<(usize, String)> = Vec::new();
    let mut files = 0;
    for (_, text) in corpus::search_texts(roots) {
        let before = all.len();
        for piece in cut(&text) {
            if seen.insert(Sha256::digest(piece.as_bytes())) {
                all.push((files, piece.to_owned()));
            }
        }
        if all.len() > before {
            files += 1;
        }
    }
    let available = all.len();
    if available < count {
        bail!(
            "found only {available} distinct pieces of text under {roots:?}, {count} wanted: \
             pass --search-memories smaller"
        );
    }
    let mut texts = Vec::with_capacity(count);
    let mut used_files = HashSet::new();
    for i in 0..count {
        let (file, text) = std::mem::take(&mut all[i * available / count]);
        used_files.insert(file);
        texts.push(text);
    }
    Ok(Pieces {
        texts,
        files: used_files.len(),
        sources: roots.to_vec(),
        available,
    })
}

/// A text cut into near-equal pieces of at most [`MAX_PIECE`] bytes, each
/// ending at a line end where there is one; pieces under [`MIN_PIECE`] are left out.
fn cut(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let rest = text.len() - start;
        let end = if rest <= MAX_PIECE {
            text.len()
        } else {
            // Pieces still to cut, were they all full: share the rest evenly.
            let mut ideal = start + rest.div_ceil(rest.div_ceil(MAX_PIECE));
            while !text.is_char_boundary(ideal) {
                ideal -= 1;
            }
            text[start..ideal]
                .rfind('\n')
                .map_or(ideal, |newline| start + newline + 1)
        };
        let piece = &text[start..end];
        if piece.len() >= MIN_PIECE {
            out.push(piece);
        }
        start = end;
    }
    out
}

/// Words as FTS5's unicode61 tokenizer sees them (runs of letters and digits), lower case.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

fn is_ascii_word(word: &str, alphabetic: bool) -> bool {
    word.bytes().all(|b| {
        if alphabetic {
            b.is_ascii_alphabetic()
        } else {
            b.is_ascii_alphanumeric()
        }
    })
}

/// `warmup + count` queries drawn from the words of `texts`, the kinds taking
/// turns; the same texts and seed always give the same queries.
pub fn queries(texts: &[String], count: usize, seed: u64) -> Vec<(QueryKind, String)> {
    // In how many memories each word (ASCII letters, 3 or more) occurs.
    let mut memories_with: HashMap<String, u32> = HashMap::new();
    for text in texts {
        let distinct: HashSet<String> = words(text)
            .filter(|w| w.len() >= 3 && is_ascii_word(w, true))
            .collect();
        for word in distinct {
            *memories_with.entry(word).or_default() += 1;
        }
    }
    let mut by_count: Vec<(u32, String)> = memories_with.into_iter().map(|(w, n)| (n, w)).collect();
    by_count.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let common: Vec<&str> = by_count
        .iter()
        .take(COMMON_WORDS)
        .map(|(_, w)| w.as_str())
        .collect();
    let rare: Vec<&str> = by_count
        .iter()
        .filter(|(n, w)| (RARE_MIN_MEMORIES..=RARE_MAX_MEMORIES).contains(n) && w.len() >= 4)
        .map(|(_, w)| w.as_str())
        .collect();
    let mut rng = Rng::new(seed ^ 0x5ea2_c4be_9c11_0003);
    let mut out = Vec::with_capacity(count);
    let mut tries = 0;
    while out.len() < count && tries < count * 100 {
        tries += 1;
        let kind = QueryKind::ALL[out.len() % QueryKind::ALL.len()];
        if let Some(query) = query(kind, texts, &common, &rare, &mut rng) {
            out.push((kind, query));
        }
    }
    out
}

/// Uniform in `0..n` (0 when `n` is 0).
fn below(rng: &mut Rng, n: usize) -> usize {
    rng.below(n.max(1) as u64) as usize
}

/// A query of `kind`, or `None` when the memory drawn has no words that fit.
fn query(
    kind: QueryKind,
    texts: &[String],
    common: &[&str],
    rare: &[&str],
    rng: &mut Rng,
) -> Option<String> {
    let single =
        |words: &[&str], rng: &mut Rng| words.get(below(rng, words.len())).map(|w| (*w).to_owned());
    match kind {
        QueryKind::CommonWord => return single(common, rng),
        QueryKind::RareWord => return single(rare, rng),
        _ => {}
    }
    let memory: Vec<String> = words(&texts[below(rng, texts.len())]).collect();
    let letters = |min_len: usize| -> Vec<&String> {
        memory
            .iter()
            .filter(|w| w.len() >= min_len && is_ascii_word(w, true))
            .collect()
    };
    match kind {
        QueryKind::TwoWords => {
            let usable = letters(3);
            let a = usable.get(below(rng, usable.len()))?;
            let b = usable.get(below(rng, usable.len()))?;
            (a != b).then(|| format!("{a} {b}"))
        }
        QueryKind::Phrase => {
            let len = 2 + below(rng, 2);
            let start = below(rng, memory.len().saturating_sub(len - 1));
            let run = memory.get(start..start + len)?;
            run.iter()
                .all(|w| is_ascii_word(w, false))
                .then(|| format!("\"{}\"", run.join(" ")))
        }
        QueryKind::Prefix => {
            let usable = letters(PREFIX_CHARS + 2);
            let word = usable.get(below(rng, usable.len()))?;
            Some(format!("{}*", &word[..PREFIX_CHARS]))
        }
        QueryKind::CommonWord | QueryKind::RareWord => None,
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

/// Longest the searches under puts go on: the puts grow the namespace
/// (500/s for 30 s is 15% more memories over 100,000).
pub const LOADED_FOR: Duration = Duration::from_secs(30);

/// Most paced puts in flight at once.
const PACED_IN_FLIGHT: usize = 64;

/// Puts one memory every `1/rate` s until `stop`: the stored texts again,
/// each behind a first line of its own, so that every put is new content the
/// indexer must index.
async fn paced_puts(
    api: Api,
    texts: Arc<Vec<String>>,
    rate: u32,
    stop: Arc<AtomicBool>,
) -> (Background, Vec<String>) {
    let mut ticks = tokio::time::interval(Duration::from_secs(1) / rate.max(1));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let slots = Arc::new(tokio::sync::Semaphore::new(PACED_IN_FLIGHT));
    let mut tasks = tokio::task::JoinSet::new();
    let started = Instant::now();
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        ticks.tick().await;
        let Ok(slot) = slots.clone().acquire_owned().await else {
            break;
        };
        let body = format!("search load put {i}\n{}", texts[i % texts.len()]);
        let api = api.clone();
        tasks.spawn(async move {
            let asked = Instant::now();
            let answer = api.put_raw(reqwest::Body::from(body), "text/plain").await;
            drop(slot);
            answer
                .map(|_| asked.elapsed())
                .map_err(|e| format!("load put {i}: {e:#}"))
        });
        i += 1;
    }
    let mut background = Background {
        rate,
        ..Background::default()
    };
    let mut errors = Vec::new();
    while let Some(outcome) = tasks.join_next().await {
        match outcome {
            Ok(Ok(latency)) => {
                background.done += 1;
                background.latencies.push(latency);
            }
            Ok(Err(problem)) => {
                background.errors += 1;
                errors.push(problem);
            }
            Err(e) => {
                background.errors += 1;
                errors.push(format!("a load put panicked: {e}"));
            }
        }
    }
    background.elapsed = started.elapsed();
    errors.truncate(KEPT_ERRORS);
    (background, errors)
}

/// What one put client did.
#[derive(Default)]
struct PutOutcome {
    latencies: Vec<Duration>,
    last_answer: Option<Instant>,
    errors: Vec<String>,
}

/// Puts memories `texts[next++]` until none is left.
async fn put_client(api: &Api, texts: &[String], next: &AtomicUsize) -> PutOutcome {
    let mut outcome = PutOutcome::default();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(text) = texts.get(i) else {
            return outcome;
        };
        let started = Instant::now();
        let answer = api
            .put_raw(reqwest::Body::from(text.clone()), "text/plain")
            .await;
        let answered = Instant::now();
        outcome.last_answer = Some(answered);
        match answer {
            Ok(_) => outcome.latencies.push(answered - started),
            Err(e) => outcome.errors.push(format!("memory {i}: {e:#}")),
        }
    }
}

/// The figures of `/v1/stats` the measure uses.
struct Lag {
    objects: u64,
    bytes: u64,
    memories: u64,
}

async fn lag(api: &Api) -> anyhow::Result<Lag> {
    let response = api
        .client
        .get(api.url("/v1/stats"))
        .send()
        .await
        .context("GET /v1/stats")?;
    let status = response.status();
    let stats = json_body(response).await?;
    if status != StatusCode::OK {
        bail!("GET /v1/stats answered {status}: {stats}");
    }
    let field = |path: &[&str]| {
        path.iter()
            .fold(&stats, |value, key| &value[*key])
            .as_u64()
            .with_context(|| format!("/v1/stats answered without `{}`", path.join(".")))
    };
    Ok(Lag {
        objects: field(&["search_index", "pending_objects"])?,
        bytes: field(&["search_index", "pending_bytes"])?,
        memories: field(&["memories"])?,
    })
}

type PutTask = tokio::task::JoinHandle<Vec<Result<PutOutcome, tokio::task::JoinError>>>;

/// Polls `/v1/stats` until the index queue is empty — with `puts`, an empty
/// queue seen after the last put answered (the puts queue their content as
/// they are answered), whose moment goes into `result`. Records the puts'
/// figures. `/v1/stats` grows costly with the namespace (it sums over its
/// memories), so each look waits [`POLL`] or [`POLL_SHARE`] times as long as
/// the previous one took, whichever is longer: the looks may not slow the
/// indexer they watch.
async fn wait_for_index(
    api: &Api,
    result: &mut Search,
    mut puts: Option<(Instant, PutTask)>,
) -> anyhow::Result<Lag> {
    let started = Instant::now();
    let mut last_put = None;
    let mut first_look_after = true;
    let mut previous_look: Option<Instant> = None;
    loop {
        if let Some((puts_started, task)) = puts.take_if(|(_, task)| task.is_finished()) {
            let mut last = puts_started;
            for outcome in task.await.context("the put clients panicked")? {
                let outcome = outcome.context("a put client panicked")?;
                result.put_latencies.extend(outcome.latencies);
                result.put_errors += outcome.errors.len() as u64;
                for error in outcome.errors {
                    result.error(error);
                }
                last = last.max(outcome.last_answer.unwrap_or(puts_started));
            }
            result.put_elapsed = last - puts_started;
            last_put = Some(last);
        }
        let asked = Instant::now();
        let now = lag(api).await?;
        let answered = Instant::now();
        result.polls += 1;
        result.poll_time += answered - asked;
        result.peak_pending_bytes = result.peak_pending_bytes.max(now.bytes);
        if let Some(last) = last_put {
            if first_look_after {
                first_look_after = false;
                result.pending_at_last_put = (now.objects, now.bytes);
            }
            if now.objects == 0 {
                result.caught_up = Some(answered);
                result.catch_up = answered - last;
                // Still behind when the previous look was asked: the moment lies in between.
                result.resolution = answered - previous_look.unwrap_or(last).max(last);
                return Ok(now);
            }
        } else if puts.is_none() && now.objects == 0 {
            return Ok(now);
        }
        if started.elapsed() > INDEX_TIMEOUT {
            bail!(
                "the search index is still {} objects ({} bytes) behind after {} s: \
                 is CAIRN_SEARCH_INDEX off?",
                now.objects,
                now.bytes,
                INDEX_TIMEOUT.as_secs()
            );
        }
        previous_look = Some(asked);
        tokio::time::sleep(POLL.max((answered - asked) * POLL_SHARE)).await;
    }
}

/// Runs the queries one after the other on one keep-alive connection.
async fn search_all(
    api: &Api,
    queries: &[(QueryKind, String)],
    warmup: usize,
    deadline: Option<Instant>,
    result: &mut Search,
) -> anyhow::Result<()> {
    let loaded = deadline.is_some();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .context("cannot build the HTTP client")?;
    let limit = LIMIT.to_string();
    for (round, (kind, query)) in queries.iter().enumerate() {
        if deadline.is_some_and(|d| Instant::now() > d) {
            break;
        }
        let url = reqwest::Url::parse_with_params(
            &api.url("/v1/search"),
            [("q", query.as_str()), ("limit", limit.as_str())],
        )
        .context("search URL")?;
        let started = Instant::now();
        let answer = match client.get(url).send().await {
            Ok(response) => {
                let status = response.status();
                response.bytes().await.map(|body| (status, body))
            }
            Err(e) => Err(e),
        };
        let latency = started.elapsed();
        let found = match answer {
            Ok((StatusCode::OK, body)) => serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|answer| answer["results"].as_array().map(Vec::len))
                .ok_or_else(|| format!("answer without `results`: {}", snippet(&body))),
            Ok((status, body)) => Err(format!("answered {status}: {}", snippet(&body))),
            Err(e) => Err(format!("request failed: {e}")),
        };
        if round < warmup {
            continue;
        }
        let results = match found {
            Ok(results) => results,
            Err(problem) => {
                result.errors += 1;
                result.error(format!("search {query}: {problem}"));
                0
            }
        };
        result.samples.push(Sample {
            kind: *kind,
            latency,
            results,
            loaded,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_end_at_lines_and_keep_all_the_text() {
        let line = "word ".repeat(19) + "\n";
        let text = line.repeat(50 * 1024 / line.len());
        let pieces = cut(&text);
        assert_eq!(pieces.len(), text.len().div_ceil(MAX_PIECE));
        assert_eq!(pieces.concat(), text);
        for piece in &pieces {
            assert!(piece.ends_with('\n'));
            assert!(
                (MIN_PIECE..=MAX_PIECE).contains(&piece.len()),
                "{}",
                piece.len()
            );
        }
        assert!(cut(&"short\n".repeat(10)).is_empty());
        // No line end to cut at, and characters of several bytes: cuts fall between characters.
        let wide = "é𝒜".repeat(10_000);
        let pieces = cut(&wide);
        assert_eq!(pieces.concat(), wide);
        assert!(pieces.len() >= 2);
        assert!(pieces.iter().all(|p| p.len() <= MAX_PIECE));
    }

    #[test]
    fn queries_take_turns_and_repeat_for_a_seed() {
        // Every third memory shares a word spelled from its number: a rare word.
        let texts: Vec<String> = (0..50)
            .map(|i: u8| {
                let rare: String = (i / 3)
                    .to_string()
                    .bytes()
                    .map(|d| char::from(d - b'0' + b'a'))
                    .collect();
                format!("alpha beta gamma{i} delta epsilon zeta-eta theta iota word{rare}\n")
            })
            .collect();
        let a = queries(&texts, 25, 7);
        assert_eq!(a, queries(&texts, 25, 7));
        assert_eq!(a.len(), 25);
        let kinds: Vec<QueryKind> = a.iter().take(5).map(|(kind, _)| *kind).collect();
        assert_eq!(kinds, QueryKind::ALL);
        assert!(a[1].1.starts_with("word"), "{}", a[1].1);
        assert_eq!(a[2].1.split(' ').count(), 2);
        assert!(a[3].1.starts_with('"') && a[3].1.ends_with('"'));
        assert!(a[4].1.ends_with('*') && a[4].1.len() == PREFIX_CHARS + 1);
    }
}
