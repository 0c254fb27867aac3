//! Retrieval inside one big memory: grep's scan speed beside GNU `grep -c`
//! on the same text in the same run, and the latency of token-budgeted
//! slices beside plain line slices, alternating (the machine is shared and
//! noisy, so only figures taken side by side count). Prints a Markdown
//! section and writes it into bench/REPORT.md between `<!-- retrieval -->`
//! markers.
//!
//! `cargo run --release -p cairn-bench --bin retrieval_bench [-- --mib 1024]`

#![allow(dead_code)]

/// The bench's text generator, shared with the main bench binary.
#[path = ".."]
mod shared {
    pub mod generate;
    pub mod marked;
    pub mod procfs;
}

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use serde_json::Value;

use shared::generate::{Rng, TextGenerator};

/// A line planted once per MiB of generated text: the rare literal.
const MARKER: &str = "ZANZIBAR quux planted marker";

/// Command-line options: `--mib N` (text size), `--runs N` (grep runs per
/// side), `--slices N` (slices per kind).
struct Options {
    mib: u64,
    runs: usize,
    slices: usize,
}

impl Options {
    fn parse() -> anyhow::Result<Self> {
        let mut options = Self {
            mib: 1024,
            runs: 3,
            slices: 300,
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let value: u64 = args
                .next()
                .with_context(|| format!("{flag} needs a number"))?
                .parse()
                .with_context(|| format!("{flag} needs a number"))?;
            match flag.as_str() {
                "--mib" => options.mib = value.max(1),
                "--runs" => options.runs = value.max(1) as usize,
                "--slices" => options.slices = value.max(10) as usize,
                _ => anyhow::bail!("unknown option {flag} (known: --mib, --runs, --slices)"),
            }
        }
        Ok(options)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = Options::parse()?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-data/retrieval");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root)?;
    let file = root.join("text.log");
    eprintln!("writing {} MiB of log text…", options.mib);
    let (bytes, lines) = write_text(&file, options.mib << 20)?;

    let config = cairn::config::Config::with_data_dir(root.join("data"));
    let app = cairn::app::App::build(&config).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let router = app.router();
    tokio::spawn(async move {
        let _app = app;
        let _ = cairn::http::serve(listener, router, std::future::pending()).await;
    });
    let client = reqwest::Client::new();
    eprintln!("storing it…");
    let id = put_file(&client, &base, &file).await?;
    let indexed = wait_for_index(&client, &base).await?;
    let quiet = wait_for_quiet().await?;

    let mut rows = Vec::new();
    for (name, pattern, fixed) in [
        ("rare literal", MARKER, true),
        (
            "regex `ERROR.*retrying request`",
            "ERROR.*retrying request",
            false,
        ),
    ] {
        let mut ours = Vec::new();
        let mut gnu = Vec::new();
        let mut read = 0;
        for run in 0..options.runs {
            eprintln!("grep {name}: run {}…", run + 1);
            let (elapsed, found, scanned) = cairn_grep(&client, &base, &id, pattern, fixed).await?;
            read = scanned;
            let (gnu_elapsed, gnu_found) = gnu_grep(&file, pattern, fixed)?;
            ensure!(
                found == gnu_found,
                "{name}: cairn found {found} lines, grep -c {gnu_found}"
            );
            ours.push(elapsed);
            gnu.push(gnu_elapsed);
            if run == 0 {
                eprintln!("  {found} matching lines");
            }
        }
        rows.push(GrepRow::new(name, bytes, read, &mut ours, &mut gnu));
    }

    eprintln!("slices…");
    let slices = slice_latencies(&client, &base, &id, lines, options.slices).await?;
    let section = render(&options, bytes, lines, (indexed, quiet), &rows, &slices);
    println!("{section}");
    shared::marked::write_section("retrieval", &section)?;
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}

/// Writes `total` bytes of generated log text with [`MARKER`] once per MiB;
/// answers the bytes and lines written.
fn write_text(path: &Path, total: u64) -> anyhow::Result<(u64, u64)> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut generator = TextGenerator::new(11);
    let (mut bytes, mut lines) = (0u64, 0u64);
    let mut chunk = Vec::with_capacity((1 << 20) + 1024);
    let mut n = 0;
    while bytes < total {
        chunk.clear();
        lines += generator.fill(&mut chunk, 1 << 20);
        chunk.extend_from_slice(format!("{MARKER} {n}\n").as_bytes());
        n += 1;
        lines += 1;
        bytes += chunk.len() as u64;
        out.write_all(&chunk)?;
    }
    out.flush()?;
    Ok((bytes, lines))
}

async fn put_file(client: &reqwest::Client, base: &str, file: &Path) -> anyhow::Result<String> {
    let stream =
        tokio_util::io::ReaderStream::with_capacity(tokio::fs::File::open(file).await?, 1 << 20);
    let answer = client
        .post(format!("{base}/v1/memories?type=LOG"))
        .header("content-type", "text/plain")
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await?
        .error_for_status()?
        .bytes()
        .await?;
    let answer: Value = serde_json::from_slice(&answer)?;
    answer["id"]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("no id in {answer}"))
}

/// Waits until the full-text index holds everything stored (so the greps
/// neither share the cores with the indexer nor run before the index can
/// tell which frames to skip); answers how long that took.
async fn wait_for_index(client: &reqwest::Client, base: &str) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut said = Instant::now();
    loop {
        let stats: Value = client
            .get(format!("{base}/v1/stats"))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let pending = stats["search_index"]["pending_bytes"].as_u64();
        ensure!(
            pending.is_some(),
            "no search_index.pending_bytes in {stats}"
        );
        if pending == Some(0) {
            return Ok(started.elapsed());
        }
        ensure!(
            started.elapsed() < Duration::from_secs(1800),
            "the search index is still {pending:?} bytes behind after 30 min"
        );
        if said.elapsed() > Duration::from_secs(15) {
            eprintln!("  indexing: {} MiB to go…", pending.unwrap_or(0) >> 20);
            said = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits (60 s at most) until this process, which holds the server, uses
/// under 0.05 cores over a second: the index's merges after it caught up
/// would otherwise share the cores with the greps. Answers how long.
async fn wait_for_quiet() -> anyhow::Result<Duration> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        let before = shared::procfs::cpu_time("self")?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let used = shared::procfs::cpu_time("self")? - before;
        if used < Duration::from_millis(50) {
            break;
        }
    }
    Ok(started.elapsed())
}

/// Greps the whole memory, following `next`: the time, the lines found and
/// the content bytes read (the rest the full-text index ruled out).
async fn cairn_grep(
    client: &reqwest::Client,
    base: &str,
    id: &str,
    pattern: &str,
    fixed: bool,
) -> anyhow::Result<(Duration, u64, u64)> {
    let started = Instant::now();
    let mut after = 0u64;
    let mut found = 0u64;
    let mut scanned = 0u64;
    loop {
        let answer = client
            .get(format!("{base}/v1/memories/{id}/grep"))
            .query(&[
                ("pattern", pattern.to_owned()),
                ("fixed", fixed.to_string()),
                ("max_matches", "1000".to_owned()),
                ("after", after.to_string()),
            ])
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await?;
        let answer: Value = serde_json::from_slice(&answer)?;
        found += answer["matches"].as_array().map_or(0, Vec::len) as u64;
        scanned += answer["scanned_bytes"].as_u64().unwrap_or(0);
        match answer["next"].as_u64() {
            Some(next) => after = next,
            None => break,
        }
    }
    Ok((started.elapsed(), found, scanned))
}

/// `grep -c` on the file: the time and its count.
fn gnu_grep(file: &Path, pattern: &str, fixed: bool) -> anyhow::Result<(Duration, u64)> {
    let started = Instant::now();
    let output = Command::new("grep")
        .arg("-c")
        .arg(if fixed { "-F" } else { "-E" })
        .arg("--")
        .arg(pattern)
        .arg(file)
        .env("LC_ALL", "C")
        .output()
        .context("cannot run grep")?;
    let elapsed = started.elapsed();
    let count = String::from_utf8_lossy(&output.stdout).trim().parse()?;
    Ok((elapsed, count))
}

/// One grep pattern's medians, side by side.
struct GrepRow {
    name: &'static str,
    ours: Duration,
    gnu: Duration,
    bytes: u64,
    read: u64,
}

impl GrepRow {
    fn new(
        name: &'static str,
        bytes: u64,
        read: u64,
        ours: &mut [Duration],
        gnu: &mut [Duration],
    ) -> Self {
        Self {
            name,
            ours: median(ours),
            gnu: median(gnu),
            bytes,
            read,
        }
    }

    fn mib_s(bytes: u64, time: Duration) -> f64 {
        bytes as f64 / (1 << 20) as f64 / time.as_secs_f64()
    }
}

/// Latencies of each slice kind, taken in turn at the same random starts.
struct SliceRows {
    kinds: Vec<(&'static str, Vec<Duration>, u64)>,
}

async fn slice_latencies(
    client: &reqwest::Client,
    base: &str,
    id: &str,
    lines: u64,
    count: usize,
) -> anyhow::Result<SliceRows> {
    let kinds = [
        ("100 lines (`start`, `end`)", "end={end}"),
        ("`max_tokens=500`", "max_tokens=500"),
        ("`max_tokens=4000`", "max_tokens=4000"),
    ];
    let mut rows: Vec<(&'static str, Vec<Duration>, u64)> = kinds
        .iter()
        .map(|(name, _)| (*name, Vec::new(), 0))
        .collect();
    let mut rng = Rng::new(5);
    for round in 0..count + 20 {
        let start = 1 + rng.below(lines.saturating_sub(200).max(1));
        for (i, (_, query)) in kinds.iter().enumerate() {
            let query = query.replace("{end}", &(start + 99).to_string());
            let url = format!("{base}/v1/memories/{id}/lines?start={start}&{query}");
            let started = Instant::now();
            let answer = client
                .get(&url)
                .send()
                .await?
                .error_for_status()?
                .bytes()
                .await?;
            let answer: Value = serde_json::from_slice(&answer)?;
            let elapsed = started.elapsed();
            ensure!(answer["start"] == start, "{url}: {answer}");
            if round >= 20 {
                rows[i].1.push(elapsed);
                rows[i].2 += answer["tokens"].as_u64().unwrap_or(0);
            }
        }
    }
    Ok(SliceRows { kinds: rows })
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let at = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[at]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn render(
    options: &Options,
    bytes: u64,
    lines: u64,
    (indexed, quiet): (Duration, Duration),
    grep: &[GrepRow],
    slices: &SliceRows,
) -> String {
    let mut out = String::from("<!-- retrieval -->\n## Retrieval inside one memory\n\n");
    out.push_str(&format!(
        "Command: `cargo run --release -p cairn-bench --bin retrieval_bench -- --mib {} --runs {} --slices {}`. \
         One memory of {:.0} MiB of generated log text ({lines} lines, a planted marker line per MiB), \
         stored through the API; GNU grep reads the same text from a file (page cache warm, `LC_ALL=C`). \
         Each side ran {} times, alternating; medians. Cairn pages through the content with `next` \
         (64 MiB scanned per request, 1,000 matches at most), and its counts equal `grep -c`'s. \
         Speeds are over the whole content; \"content Cairn read\" is what it decoded and scanned: \
         the full-text index rules out the 512 KiB frames that lack a word the pattern pins whole \
         (the rare literal pins `quux` and `planted`; the regex pins none, its literals could go on \
         into longer words), and a page that stops inside a line reads that line again.\n\n",
        options.mib,
        options.runs,
        options.slices,
        bytes as f64 / (1 << 20) as f64,
        options.runs,
    ));
    out.push_str(&format!(
        "The greps ran once the full-text index had caught up with the put ({:.0} s after it, \
         {:.1} MiB/s indexed) and the server was quiet ({:.0} s later: index merges).\n\n",
        indexed.as_secs_f64(),
        bytes as f64 / (1 << 20) as f64 / indexed.as_secs_f64().max(0.001),
        quiet.as_secs_f64(),
    ));
    out.push_str(
        "| pattern | Cairn grep | GNU `grep -c` | Cairn / grep | content Cairn read |\n| --- | --- | --- | --- | --- |\n",
    );
    for row in grep {
        let ours = GrepRow::mib_s(row.bytes, row.ours);
        let gnu = GrepRow::mib_s(row.bytes, row.gnu);
        out.push_str(&format!(
            "| {} | {:.2} s ({ours:.0} MiB/s) | {:.2} s ({gnu:.0} MiB/s) | {:.2}× | {:.0} % |\n",
            row.name,
            row.ours.as_secs_f64(),
            row.gnu.as_secs_f64(),
            ours / gnu,
            row.read as f64 * 100.0 / row.bytes.max(1) as f64,
        ));
    }
    out.push_str(&format!(
        "\nSlices at {} random starts in the same memory, each kind in turn at the same start \
         (JSON answers, one client, keep-alive):\n\n| slice | p50 | p99 | mean tokens |\n| --- | --- | --- | --- |\n",
        options.slices
    ));
    for (name, samples, tokens) in &slices.kinds {
        let mean = *tokens as f64 / samples.len() as f64;
        let p50 = percentile(&mut samples.clone(), 0.5);
        let p99 = percentile(&mut samples.clone(), 0.99);
        let mean = if mean > 0.0 {
            format!("{mean:.0}")
        } else {
            "–".to_owned()
        };
        out.push_str(&format!(
            "| {name} | {:.2} ms | {:.2} ms | {mean} |\n",
            ms(p50),
            ms(p99)
        ));
    }
    out.push_str("<!-- /retrieval -->\n");
    out
}
