//! `cairn-bench`: starts a release Cairn server over a fresh data directory,
//! measures ingest speed, memory during a large upload, slice latency and
//! durable small puts, compress latency, and search latency and index
//! throughput over real text, and writes a Markdown report. The
//! token-counting measure needs no server and writes its own section of the report.

mod api;
mod corpus;
mod generate;
mod judge;
mod measure;
mod phases;
mod procfs;
mod report;
mod server;
mod stats;
mod token_report;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;

use crate::measure::puts::PutBody;
use crate::report::{Machine, Report};
use crate::stats::MIB;

/// Benchmarks a Cairn release server it starts itself.
#[derive(Parser, Debug)]
#[command(name = "cairn-bench", version)]
pub struct Cli {
    /// Small scale for a sanity run: 20 MiB ingest file, 100 MiB big upload,
    /// 300 slices, 3 s of puts (explicit size options still win).
    #[arg(long)]
    pub quick: bool,
    /// The server binary [default: <workspace>/target/release/cairn].
    #[arg(long)]
    pub server: Option<PathBuf>,
    /// The zstd command line tool to compare with.
    #[arg(long, default_value = "/usr/bin/zstd")]
    pub zstd: PathBuf,
    /// Where run directories go [default: <workspace>/target/bench-data].
    #[arg(long)]
    pub data_root: Option<PathBuf>,
    /// Keep the run directory (server data, ingest file, server log).
    #[arg(long)]
    pub keep: bool,
    /// Where to write the report [default: <workspace>/bench/REPORT.md].
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Size of the ingest file in MiB [default: 200, quick: 20].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub ingest_mib: Option<u64>,
    /// Size of the big streamed upload in MiB [default: 1024, quick: 100].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub big_mib: Option<u64>,
    /// Measured slice requests [default: 2000, quick: 300].
    #[arg(long)]
    pub slices: Option<usize>,
    /// Warm-up slice requests before measuring.
    #[arg(long, default_value_t = 100)]
    pub slice_warmup: usize,
    /// Seconds of small puts [default: 10, quick: 3].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub put_seconds: Option<u64>,
    /// Concurrent put clients.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    pub put_clients: u16,
    /// Content bytes per put.
    #[arg(long, default_value_t = 10_240, value_parser = clap::value_parser!(u32).range(256..))]
    pub put_bytes: u32,
    /// How puts carry their content.
    #[arg(long, value_enum, default_value_t = PutBody::Json)]
    pub put_body: PutBody,
    /// Seed of all generated text and slice positions.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Skip the ingest measure.
    #[arg(long)]
    pub skip_ingest: bool,
    /// Skip the big upload (slices then use the ingest file's memory).
    #[arg(long)]
    pub skip_big: bool,
    /// Skip the slice measure.
    #[arg(long)]
    pub skip_slices: bool,
    /// Skip the put measure.
    #[arg(long)]
    pub skip_puts: bool,
    /// Skip the token-counting measure.
    #[arg(long)]
    pub skip_tokens: bool,
    /// Skip the compress measure.
    #[arg(long)]
    pub skip_compress: bool,
    /// Repeat calls of the compress measure (after its first call).
    #[arg(long, default_value_t = 9, value_parser = clap::value_parser!(u16).range(1..))]
    pub compress_repeats: u16,
    /// Skip the search measure.
    #[arg(long)]
    pub skip_search: bool,
    /// Memories of real text the search measure stores [default: 10000, quick: 1000].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub search_memories: Option<u64>,
    /// Measured searches [default: 2000, quick: 300].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub searches: Option<u64>,
    /// Warm-up searches before measuring.
    #[arg(long, default_value_t = 100)]
    pub search_warmup: usize,
    /// Concurrent put clients of the search measure.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub search_clients: u16,
    /// Folders whose text files the search measure cuts into memories, comma
    /// separated [default: the cargo registry's sources and /usr/share/doc].
    #[arg(long, value_delimiter = ',')]
    pub search_roots: Vec<PathBuf>,
    /// Puts per second going on while the searches are measured a second
    /// time (0: measure idle only).
    #[arg(long, default_value_t = 500)]
    pub search_put_rate: u32,
    /// Run only this measure (the others are skipped). Tokens, compress and
    /// search replace their own section of the report file; the others rewrite it.
    #[arg(long, value_enum)]
    pub only: Option<Measure>,
    /// Size of the token-counting corpus in MiB [default: 64, quick: 8].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub tokens_mib: Option<u64>,
}

/// A measure to run alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Measure {
    /// Ingest speed against zstd.
    Ingest,
    /// The big streamed upload.
    Big,
    /// Slice latency (takes its memory from the ingest measure).
    Slices,
    /// Durable small puts.
    Puts,
    /// Token counting speed (no server).
    Tokens,
    /// `POST /v1/compress` latency.
    Compress,
    /// `GET /v1/search` latency and index throughput over real text.
    Search,
}

impl Cli {
    /// Applies `--only`: every other measure is skipped.
    fn apply_only(&mut self) {
        let Some(only) = self.only else {
            return;
        };
        // Slices need a stored memory: the ingest file's, when run alone.
        self.skip_ingest = !matches!(only, Measure::Ingest | Measure::Slices);
        self.skip_big = only != Measure::Big;
        self.skip_slices = only != Measure::Slices;
        self.skip_puts = only != Measure::Puts;
        self.skip_tokens = only != Measure::Tokens;
        self.skip_compress = only != Measure::Compress;
        self.skip_search = only != Measure::Search;
    }

    /// Whether a measure of the server runs.
    pub fn runs(&self, measure: Measure) -> bool {
        match measure {
            Measure::Ingest => !self.skip_ingest,
            Measure::Big => !self.skip_big,
            Measure::Slices => !self.skip_slices,
            Measure::Puts => !self.skip_puts,
            Measure::Tokens => !self.skip_tokens,
            Measure::Compress => !self.skip_compress,
            Measure::Search => !self.skip_search,
        }
    }

    /// True when a measure of the server is selected.
    fn needs_server(&self) -> bool {
        !(self.skip_ingest
            && self.skip_big
            && self.skip_slices
            && self.skip_puts
            && self.skip_compress
            && self.skip_search)
    }
}

/// The sizes in force, after `--quick` and explicit options.
#[derive(Debug)]
pub struct Scale {
    /// Size of the ingest file.
    pub ingest_bytes: u64,
    /// Size of the big streamed upload.
    pub big_bytes: u64,
    /// Measured slice requests.
    pub slices: usize,
    /// How long put clients start new puts.
    pub put_duration: Duration,
    /// Size of the token-counting corpus.
    pub tokens_bytes: u64,
    /// Memories the search measure stores.
    pub search_memories: usize,
    /// Measured searches.
    pub searches: usize,
}

impl Scale {
    fn of(cli: &Cli) -> Self {
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let pick = |explicit: Option<u64>, full: u64, quick: u64| {
            explicit.unwrap_or(if cli.quick { quick } else { full })
        };
        Self {
            ingest_bytes: pick(cli.ingest_mib, 200, 20) * MIB,
            big_bytes: pick(cli.big_mib, 1024, 100) * MIB,
            slices: cli.slices.unwrap_or(if cli.quick { 300 } else { 2000 }),
            put_duration: Duration::from_secs(pick(cli.put_seconds, 10, 3)),
            tokens_bytes: pick(cli.tokens_mib, 64, 8) * MIB,
            search_memories: count(pick(cli.search_memories, 10_000, 1000)),
            searches: count(pick(cli.searches, 2000, 300)),
        }
    }
}

/// The workspace root (the parent of this crate), for default paths.
pub fn workspace() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_owned()
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut cli = Cli::parse();
    cli.apply_only();
    match run(&cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cairn-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the selected measures, then prints and writes the report.
async fn run(cli: &Cli) -> anyhow::Result<()> {
    let scale = Scale::of(cli);
    let (report, outcome, interrupted) = if cli.needs_server() {
        run_server_measures(cli, &scale).await?
    } else {
        (None, Ok(()), false)
    };
    let tokens = if cli.skip_tokens || interrupted {
        None
    } else {
        Some(tokens_section(&scale).await?)
    };
    if let Some(section) = &tokens {
        println!("{section}");
    }
    if report.is_none() && tokens.is_none() {
        return outcome;
    }
    if interrupted {
        // A partial report printed is enough; keep the last complete one on disk.
        return outcome;
    }
    let path = cli
        .report
        .clone()
        .unwrap_or_else(|| workspace().join("bench/REPORT.md"));
    if let (Some(only @ (Measure::Compress | Measure::Search)), Some(section)) = (cli.only, &report)
    {
        // A run of compress or search alone replaces only its own section of the file.
        let text = report::with_section(&path, only, section);
        std::fs::write(&path, &text)
            .with_context(|| format!("cannot write the report to {}", path.display()))?;
        eprintln!("report written to {}", path.display());
        return outcome;
    }
    let previous = std::fs::read_to_string(&path).ok();
    let base = report.or_else(|| previous.clone()).unwrap_or_default();
    let text = token_report::splice(&base, tokens.as_deref(), previous.as_deref());
    std::fs::write(&path, &text)
        .with_context(|| format!("cannot write the report to {}", path.display()))?;
    eprintln!("report written to {}", path.display());
    outcome
}

/// Measures token counting over a corpus of this machine's text files.
async fn tokens_section(scale: &Scale) -> anyhow::Result<String> {
    let target = scale.tokens_bytes;
    let result = tokio::task::spawn_blocking(move || {
        eprintln!("reading a {} corpus…", judge::mib(target));
        let corpus = corpus::read(&corpus::default_roots(), target)?;
        Ok::<_, anyhow::Error>(measure::tokens::run(&corpus))
    })
    .await??;
    Ok(token_report::render(
        &result,
        &command_line(),
        report::git_revision(&workspace()).as_deref(),
    ))
}

/// Runs the server measures in a fresh run directory; answers the rendered
/// report (if any measure was recorded), the outcome and whether the run was interrupted.
async fn run_server_measures(
    cli: &Cli,
    scale: &Scale,
) -> anyhow::Result<(Option<String>, anyhow::Result<()>, bool)> {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S").to_string();
    let root = cli
        .data_root
        .clone()
        .unwrap_or_else(|| workspace().join("target/bench-data"));
    let dir = root.join(&stamp);
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;

    let mut report = Report::new(Machine::detect());
    describe_run(&mut report, cli, scale);
    let mut interrupted = false;
    let outcome = tokio::select! {
        outcome = phases::bench(cli, scale, &dir, &stamp, &mut report) => outcome,
        _ = tokio::signal::ctrl_c() => {
            interrupted = true;
            Err(anyhow::anyhow!("interrupted"))
        }
    };
    report.fact("Load average at the end", report::load_average());

    if cli.keep {
        eprintln!("kept the run directory {}", dir.display());
    } else if let Err(e) = std::fs::remove_dir_all(&dir) {
        eprintln!("cairn-bench: cannot remove {}: {e}", dir.display());
    }
    if let Err(e) = &outcome {
        report.note(format!("The run stopped early: {e:#}"));
    }
    let text = report.has_rows().then(|| report.render());
    if let Some(text) = &text {
        println!("{text}");
    }
    Ok((text, outcome, interrupted))
}

/// The command that ran this benchmark, as the report quotes it.
fn command_line() -> String {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .map(|a| if a.contains(' ') { format!("'{a}'") } else { a })
        .collect();
    let separator = if args.is_empty() { "" } else { " -- " };
    format!(
        "`cargo run --release -p cairn-bench{separator}{}`",
        args.join(" ")
    )
}

/// Header facts: the command, the scale, the code under test, the load.
fn describe_run(report: &mut Report, cli: &Cli, scale: &Scale) {
    report.fact("Command", command_line());
    report.fact(
        "Scale",
        format!(
            "ingest file {}, big upload {}, {} slices (+{} warm-up), {} s of puts, \
             {} search memories and {} searches (+{} warm-up){}",
            judge::mib(scale.ingest_bytes),
            judge::mib(scale.big_bytes),
            scale.slices,
            cli.slice_warmup,
            scale.put_duration.as_secs(),
            scale.search_memories,
            scale.searches,
            cli.search_warmup,
            if cli.quick { " (--quick)" } else { "" }
        ),
    );
    if let Some(revision) = report::git_revision(&workspace()) {
        report.fact("Code", format!("git {revision}"));
    }
    let load = report::load_average();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let busy = load
        .split_whitespace()
        .next()
        .and_then(|one_minute| one_minute.parse::<f64>().ok())
        .is_some_and(|one_minute| one_minute > 0.5 * cpus as f64);
    if busy {
        report.note(format!(
            "The machine was not idle at the start (load average {load}): \
             other work competed for the CPUs, so the figures are pessimistic."
        ));
    }
    report.fact("Load average at the start", load);
}
