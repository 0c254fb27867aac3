//! Compression of whole message lists (OpenAI chat, Anthropic Messages).
//!
//! A strategy selects texts to offload or message runs to fold; every piece
//! taken out is first stored as a memory and replaced by a [`marker`] that
//! names its pointer. The rules that hold for every strategy: markers are
//! never offloaded, folded or re-hydrated (so compressing the output again
//! changes nothing); tool calls stay paired with their results ([`pairs`]);
//! the first `preserve_prefix` messages and everything up to the last
//! `cache_control` marker stay untouched; a replacement is made only when it
//! has fewer tokens than what it replaces.

mod accounted;
mod apply;
mod context;
mod deletion;
pub mod fold;
pub mod format;
pub mod marker;
mod masking;
pub mod offload;
pub mod pairs;
mod pointer;
mod selective;
mod validate;
mod window;

use std::ops::Range;
use std::sync::Arc;

use serde_json::Value;

pub use self::accounted::{Accounted, account};
pub use self::context::Context;
use self::format::Format;
use self::offload::{Job, Offloader, StoredRef};
use super::DomainError;
use super::memories::Memories;
use super::tokens::{Counter, Digested};

/// Characters a marker adds beyond its summary (header line, id, counts):
/// texts shorter than `summary_chars` plus this are never offloaded.
const MARKER_ALLOWANCE: usize = 300;

/// A compression strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Offload texts over a threshold.
    Pointer,
    /// Keep the last K tool results, point to older ones.
    ObservationMasking,
    /// Keep system prompts and the last N messages, fold the rest into one summary.
    SlidingWindow,
    /// Keep system prompts, tool pairs, errors and important messages; fold the rest.
    Selective,
    /// Drop old messages after archiving them; leave one notice.
    Deletion,
}

impl Strategy {
    /// Every strategy's name, as clients spell it.
    pub const NAMES: [&'static str; 5] = [
        "pointer",
        "observation_masking",
        "sliding_window",
        "selective",
        "deletion",
    ];

    /// Parses a strategy name; an unknown one is a 400 listing the valid ones.
    pub fn parse(name: &str) -> Result<Self, DomainError> {
        Ok(match name {
            "pointer" => Self::Pointer,
            "observation_masking" => Self::ObservationMasking,
            "sliding_window" => Self::SlidingWindow,
            "selective" => Self::Selective,
            "deletion" => Self::Deletion,
            _ => {
                return Err(DomainError::field(
                    "strategy",
                    format!(
                        "unknown strategy `{name}`: use one of {}",
                        Self::NAMES.join(", ")
                    ),
                ));
            }
        })
    }

    /// The strategy's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pointer => "pointer",
            Self::ObservationMasking => "observation_masking",
            Self::SlidingWindow => "sliding_window",
            Self::Selective => "selective",
            Self::Deletion => "deletion",
        }
    }

    /// `keep_recent` when the client gives none: messages for the folding
    /// strategies, tool results for masking, none for pointer.
    pub fn default_keep_recent(self) -> usize {
        match self {
            Self::Pointer => 0,
            Self::ObservationMasking => 3,
            Self::SlidingWindow | Self::Deletion => 20,
            Self::Selective => 6,
        }
    }
}

/// What to do: one strategy, or (for the governor) offloading by size and
/// masking of older tool results together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// One strategy with the options' parameters.
    Strategy(Strategy),
    /// `pointer` at `threshold_chars` plus `observation_masking` keeping `mask_keep` results.
    PointerAndMasking {
        /// Offload texts over this many characters.
        threshold_chars: usize,
        /// Tool results kept verbatim.
        mask_keep: usize,
    },
}

impl Policy {
    /// The name reported as `strategy`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Strategy(strategy) => strategy.name(),
            Self::PointerAndMasking { .. } => "pointer+observation_masking",
        }
    }
}

/// Parameters common to the strategies.
#[derive(Clone, Debug)]
pub struct Options {
    /// Texts over this many characters are offloaded by `pointer` (default 6000).
    pub threshold_chars: usize,
    /// Longest summary kept in a marker (default 800).
    pub summary_chars: usize,
    /// Recent messages (tool results for masking) left alone; None: the strategy's default.
    pub keep_recent: Option<usize>,
    /// Messages at the start never edited.
    pub preserve_prefix: usize,
    /// Tools whose calls and results are left alone.
    pub leave_tools: Vec<String>,
    /// Roles whose messages are left alone (`tool` covers tool results of both formats).
    pub leave_roles: Vec<String>,
    /// Leave everything up to the last Anthropic `cache_control` untouched (the
    /// default). The proxy's offload turns it off: it replaces the same content
    /// by the same marker on every turn, so what the provider cached was already
    /// the replaced text.
    pub respect_cache_control: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            threshold_chars: 6000,
            summary_chars: 800,
            keep_recent: None,
            preserve_prefix: 0,
            leave_tools: Vec::new(),
            leave_roles: Vec::new(),
            respect_cache_control: true,
        }
    }
}

/// A message list to compress.
#[derive(Clone, Debug, Default)]
pub struct Input {
    /// The messages.
    pub messages: Vec<Value>,
    /// Anthropic's system prompt (passed through untouched).
    pub system: Option<Value>,
    /// `openai` or `anthropic`; None: detected.
    pub format: Option<String>,
    /// Model, for token counting and format detection.
    pub model: Option<String>,
    /// Thread link of the stored pieces.
    pub thread: Option<String>,
}

/// One offloaded text or folded run.
#[derive(Clone, Debug)]
pub struct Offloaded {
    /// Index of the (first) message in the input.
    pub index: usize,
    /// Messages folded or dropped (0 for an offloaded text).
    pub messages: usize,
    /// The memory holding it.
    pub id: String,
    /// Tokens of what was taken out.
    pub tokens: u64,
}

/// The compressed list and what was done.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The format used.
    pub format: Format,
    /// The compressed messages.
    pub messages: Vec<Value>,
    /// The system prompt, unchanged.
    pub system: Option<Value>,
    /// Memories the output refers to, in order of first reference.
    pub refs: Vec<Arc<StoredRef>>,
    /// What was offloaded or folded.
    pub offloaded: Vec<Offloaded>,
    /// Tokens of the input.
    pub tokens_before: u64,
    /// Tokens of the output.
    pub tokens_after: u64,
    /// How tokens were counted.
    pub counter: Counter,
    /// The policy's name.
    pub strategy: &'static str,
}

/// What a strategy picked: texts to offload and message runs to fold (a
/// strategy may pick both, never a text inside a run).
#[derive(Clone, Debug, Default)]
struct Selection {
    /// Indexes into the pieces: texts to offload.
    pieces: Vec<usize>,
    /// Message runs to fold.
    runs: Vec<Range<usize>>,
    /// Leave a short notice for each run instead of a summary (`deletion`).
    drop: bool,
    /// Keep an offloaded text's failure lines inline after its marker (`selective`).
    failures_inline: bool,
}

impl Selection {
    fn pieces(pieces: Vec<usize>) -> Self {
        Self {
            pieces,
            ..Self::default()
        }
    }

    fn runs(runs: Vec<Range<usize>>, drop: bool) -> Self {
        Self {
            runs,
            drop,
            ..Self::default()
        }
    }
}

/// Compresses message lists, storing what it takes out.
pub struct Compressor {
    offloader: Offloader,
}

impl Compressor {
    /// A compressor over the memory service.
    pub fn new(memories: Arc<Memories>) -> Self {
        Self {
            offloader: Offloader::new(memories),
        }
    }

    /// Compresses `input` in `namespace` as `policy` says. With `dry_run`
    /// nothing is stored: the answer shows what compressing would give.
    #[tracing::instrument(skip_all, fields(strategy = policy.name(), dry_run))]
    pub async fn compress(
        &self,
        namespace: &str,
        input: Input,
        policy: Policy,
        options: Options,
        dry_run: bool,
    ) -> Result<Outcome, DomainError> {
        let options = Arc::new(options);
        let thread = input.thread.clone();
        let plan_options = options.clone();
        let mut prepared = spawn_blocking(move || prepare(input, policy, &plan_options)).await??;
        let jobs = std::mem::take(&mut prepared.jobs);
        let refs = self
            .offloader
            .store(namespace, jobs, thread.as_deref(), dry_run)
            .await?;
        // The input is counted after the puts, not beside them: each piece
        // stored left its exact count in the shared cache under its content
        // hash, which its job made already, so its text costs neither a
        // second BPE pass competing with the puts for the same cores nor a
        // second SHA-256 pass.
        spawn_blocking(move || {
            prepared.tokens_before = prepared.counter.count_messages_digested(
                &prepared.messages,
                prepared.system.as_deref(),
                &prepared.digested,
            );
            apply::apply(prepared, &refs, &options, policy)
        })
        .await?
    }
}

async fn spawn_blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, DomainError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(DomainError::internal)
}

impl Compressor {
    /// Detects, validates and counts `input` (handed back) without compressing it.
    pub async fn count(&self, input: Input) -> Result<(Input, u64, Counter), DomainError> {
        spawn_blocking(move || {
            let format = format::detect(
                &input.messages,
                input.system.as_ref(),
                input.format.as_deref(),
                input.model.as_deref(),
            )?;
            format::validate(format, &input.messages, input.system.as_ref())?;
            pairs::check(format, &input.messages, false)?;
            let counter = Counter::for_model(input.model.as_deref());
            let tokens = counter.count_messages(&input.messages, input.system.as_ref());
            Ok((input, tokens, counter))
        })
        .await?
    }
}

/// A text the `pointer` strategy would offload: its message and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Index of its message.
    pub message: usize,
    /// Its length in characters.
    pub chars: usize,
}

/// The texts `pointer` would offload from `input` with `options`, in order,
/// without storing or counting anything; none when the list's format cannot
/// be told (compressing it then says why).
pub fn pointer_candidates(input: &Input, options: &Options) -> Vec<Candidate> {
    let Ok(format) = format::detect(
        &input.messages,
        input.system.as_ref(),
        input.format.as_deref(),
        input.model.as_deref(),
    ) else {
        return Vec::new();
    };
    let ctx = Context::new(format, &input.messages, options);
    ctx.select(Policy::Strategy(Strategy::Pointer))
        .pieces
        .into_iter()
        .map(|i| {
            let piece = &ctx.pieces[i];
            Candidate {
                message: piece.message,
                chars: ctx.chars(piece),
            }
        })
        .collect()
}

/// The most characters a marker takes (its summary and its header).
pub fn marker_chars(options: &Options) -> usize {
    options.summary_chars + MARKER_ALLOWANCE
}

/// A validated list with its selection, before storing.
struct Prepared {
    format: Format,
    messages: Arc<Vec<Value>>,
    system: Option<Arc<Value>>,
    counter: Counter,
    selection: Selection,
    jobs: Vec<Job>,
    /// The digests the jobs made of the texts they store, as those texts
    /// sit in `messages` (kept alive and unchanged with them).
    digested: Digested,
    /// Counted while the pieces are stored.
    tokens_before: u64,
}

fn prepare(input: Input, policy: Policy, options: &Options) -> Result<Prepared, DomainError> {
    let format = format::detect(
        &input.messages,
        input.system.as_ref(),
        input.format.as_deref(),
        input.model.as_deref(),
    )?;
    format::validate(format, &input.messages, input.system.as_ref())?;
    pairs::check(format, &input.messages, false)?;
    let counter = Counter::for_model(input.model.as_deref());
    let ctx = Context::new(format, &input.messages, options);
    let selection = ctx.select(policy);
    let jobs = ctx.jobs(&selection);
    let mut digested = Digested::default();
    for (&i, job) in selection.pieces.iter().zip(&jobs) {
        digested.note(ctx.text(&ctx.pieces[i]), job.hash);
    }
    Ok(Prepared {
        format,
        counter,
        selection,
        jobs,
        digested,
        tokens_before: 0,
        messages: Arc::new(input.messages),
        system: input.system.map(Arc::new),
    })
}
