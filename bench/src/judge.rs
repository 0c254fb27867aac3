//! Turns measured figures into report rows against the targets.

use std::time::Duration;

use crate::api::Stored;
use crate::measure::big_upload::BigUpload;
use crate::measure::ingest::Ingest;
use crate::measure::puts::{PutLoad, Puts};
use crate::measure::search::{self, QueryKind, Search};
use crate::measure::slices::{SLICE_LINES, Slices};
use crate::procfs::CpuUse;
use crate::report::Report;
use crate::stats::{MIB, Percentiles, kib_to_mib, mib_per_s, ms};

/// Cairn's raw upload must be at least this many times as fast as `zstd -3 -T1`.
const INGEST_VS_ZSTD_MIN: f64 = 1.0;
/// Peak server RSS during the big upload: 150 MB as the target states it
/// (MB = 10^6 bytes), in MiB (143.05).
const PEAK_RSS_MAX_MIB: f64 = 150e6 / MIB as f64;
/// Slice latency targets, ms.
const SLICE_P50_MAX_MS: f64 = 2.0;
const SLICE_P99_MAX_MS: f64 = 5.0;
/// Durable small puts per second.
const PUTS_MIN_PER_S: f64 = 3000.0;
/// Search latency targets of every query kind, idle and under puts, ms:
/// p50 on SQLite, p50 on PostgreSQL, and p99.
const SEARCH_P50_MAX_MS: f64 = 10.0;
const SEARCH_P50_MAX_MS_POSTGRES: f64 = 30.0;
const SEARCH_P99_MAX_MS: f64 = 50.0;

/// Rows of the ingest measure.
pub fn ingest(report: &mut Report, ingest: &Ingest) {
    let size = mib(ingest.file_bytes);
    let zstd = mib_per_s(ingest.file_bytes, ingest.zstd);
    let cairn = mib_per_s(ingest.file_bytes, ingest.upload);
    report.info(
        format!("`zstd -3 -T1` of a {size} text file"),
        format!("{zstd:.1} MiB/s ({})", secs(ingest.zstd)),
    );
    report.info(
        "Cairn raw streamed upload of the same file",
        format!("{cairn:.1} MiB/s ({})", secs(ingest.upload)),
    );
    let ratio = cairn / zstd;
    report.check(
        "Ingest speed / zstd speed",
        format!("{ratio:.2}×"),
        format!("≥ {INGEST_VS_ZSTD_MIN:.1}×"),
        ratio >= INGEST_VS_ZSTD_MIN,
    );
    cpu_note(report, "the ingest upload", &ingest.cpu);
    stored_ratio(report, "Stored / raw (ingest file)", &ingest.stored);
    content_matches(
        report,
        "Ingest answer matches the file (id, bytes, lines)",
        &ingest.stored,
        Some(&ingest.sha256),
        ingest.file_bytes,
        ingest.file_lines,
    );
}

/// Rows of the big upload measure.
pub fn big_upload(report: &mut Report, big: &BigUpload) {
    let size = mib(big.bytes);
    report.info(
        format!("Streamed upload of {size} generated on the fly"),
        format!(
            "{:.1} MiB/s ({})",
            mib_per_s(big.bytes, big.elapsed),
            secs(big.elapsed)
        ),
    );
    let peak = kib_to_mib(big.peak_rss_kib);
    report.check(
        format!(
            "Peak server VmRSS during it ({} samples, 20 ms apart)",
            big.samples
        ),
        format!("{peak:.1} MiB ({:.1} MB)", peak * MIB as f64 / 1e6),
        format!("< 150 MB ({PEAK_RSS_MAX_MIB:.2} MiB)"),
        peak < PEAK_RSS_MAX_MIB,
    );
    let hwm = kib_to_mib(big.hwm_kib);
    let hwm_scope = if big.hwm_reset.is_ok() {
        "server VmHWM after it (reset just before)"
    } else {
        "server VmHWM after it (whole server life)"
    };
    report.check(
        hwm_scope,
        format!("{hwm:.1} MiB ({:.1} MB)", hwm * MIB as f64 / 1e6),
        format!("< 150 MB ({PEAK_RSS_MAX_MIB:.2} MiB)"),
        hwm < PEAK_RSS_MAX_MIB,
    );
    report.note(format!(
        "Server VmRSS just before the big upload: {:.1} MiB.",
        kib_to_mib(big.before.rss_kib)
    ));
    cpu_note(report, "the big upload", &big.cpu);
    if let Err(e) = &big.hwm_reset {
        report.note(format!("Could not reset VmHWM before the big upload: {e}"));
    }
    stored_ratio(report, "Stored / raw (big upload)", &big.stored);
    content_matches(
        report,
        "Big upload answer matches what was sent (bytes, lines)",
        &big.stored,
        None,
        big.bytes,
        big.lines,
    );
}

/// Rows of the slice measure over the memory described by `of`.
pub fn slices(report: &mut Report, slices: &mut Slices, of: &str) {
    let count = slices.latencies.len();
    let p = Percentiles::of(&mut slices.latencies);
    let what = format!("{SLICE_LINES}-line slice of {of}");
    report.check(
        format!("{what}: p50 ({count} sequential GETs)"),
        format!("{:.2} ms", ms(p.p50)),
        format!("< {SLICE_P50_MAX_MS} ms"),
        ms(p.p50) < SLICE_P50_MAX_MS,
    );
    report.info(format!("{what}: p90"), format!("{:.2} ms", ms(p.p90)));
    report.check(
        format!("{what}: p99"),
        format!("{:.2} ms", ms(p.p99)),
        format!("< {SLICE_P99_MAX_MS} ms"),
        ms(p.p99) < SLICE_P99_MAX_MS,
    );
    report.info(format!("{what}: max"), format!("{:.2} ms", ms(p.max)));
    let floor = Percentiles::of(&mut slices.baseline);
    report.info(
        format!(
            "HTTP floor: `GET /healthz` p50 / p99 ({} requests, same connection)",
            slices.baseline.len()
        ),
        format!("{:.2} / {:.2} ms", ms(floor.p50), ms(floor.p99)),
    );
    report.check(
        "Slice answers not 200 with the asked lines",
        slices.errors.to_string(),
        "0",
        slices.errors == 0,
    );
    if slices.truncated > 0 {
        report.note(format!(
            "{} slice answers were truncated by the byte cap (allowed).",
            slices.truncated
        ));
    }
    for sample in &slices.error_samples {
        report.note(format!("Slice error: {sample}"));
    }
}

/// Compress rows: the transcript, the first call, the repeats' p50.
pub fn compress(report: &mut Report, result: &mut crate::measure::compress::Compress) {
    report.info(
        format!(
            "Compress transcript: {} messages, {} KiB of JSON, OpenAI format, strategy pointer",
            crate::measure::compress::MESSAGES,
            result.body_bytes >> 10
        ),
        format!(
            "{} → {} tokens (exact o200k_base), {} pieces offloaded",
            result.tokens_before, result.tokens_after, result.offloaded
        ),
    );
    let first = ms(result.first);
    report.check(
        "`POST /v1/compress`, first call (every piece stored)",
        format!("{first:.1} ms"),
        "< 100 ms",
        first < 100.0,
    );
    let repeats = result.repeats.len();
    let p50 = ms(Percentiles::of(&mut result.repeats).p50);
    report.check(
        format!("`POST /v1/compress`, same transcript again: p50 of {repeats}"),
        format!("{p50:.1} ms"),
        "< 20 ms",
        p50 < 20.0,
    );
    report.check(
        "Repeat answers identical to the first",
        if result.repeats_identical {
            "yes"
        } else {
            "no"
        },
        "yes",
        result.repeats_identical,
    );
}

/// Rows of the put measure.
pub fn puts(report: &mut Report, puts: &mut Puts, load: &PutLoad) {
    let rate = puts.created as f64 / puts.elapsed.as_secs_f64().max(1e-9);
    let p = Percentiles::of(&mut puts.latencies);
    let size = if load.content_bytes.is_multiple_of(1024) {
        format!("{} KiB", load.content_bytes / 1024)
    } else {
        format!("{} B", load.content_bytes)
    };
    let what = format!(
        "Durable {size} puts ({} bodies), {} clients",
        load.body, load.clients
    );
    report.check(
        format!(
            "{what}: rate ({} created in {})",
            puts.created,
            secs(puts.elapsed)
        ),
        format!("{rate:.0}/s"),
        format!("≥ {PUTS_MIN_PER_S:.0}/s"),
        rate >= PUTS_MIN_PER_S,
    );
    report.info(
        format!("{what}: p50 latency"),
        format!("{:.2} ms", ms(p.p50)),
    );
    report.info(
        format!("{what}: p99 latency"),
        format!("{:.2} ms", ms(p.p99)),
    );
    report.check(
        "Puts not answered 201",
        puts.errors.to_string(),
        "0",
        puts.errors == 0,
    );
    cpu_note(report, "the puts", &puts.cpu);
    for sample in &puts.error_samples {
        report.note(format!("Put error: {sample}"));
    }
}

/// Search rows: the corpus, the puts, the index throughput, latency overall and per kind.
pub fn search(report: &mut Report, result: &mut Search) {
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let sources: Vec<String> = result
        .sources
        .iter()
        .map(|p| format!("`{}`", p.display()))
        .collect();
    report.info(
        format!(
            "Search corpus: {} memories, each a {}–{} KiB piece (cut at line ends) of one real text file; \
             {} files (`.rs`, `.md`, `.txt`, `.html`, `.c`, `.h`, `.py`, `.js`, extension-less) under {}, spread over the {} distinct pieces found",
            result.memories,
            search::MIN_PIECE >> 10,
            search::MAX_PIECE >> 10,
            result.files,
            sources.join(", "),
            result.available
        ),
        format!(
            "{:.1} MB (MB = 10^6 B; mean {:.1} KiB, {}–{} B)",
            mb(result.bytes),
            result.bytes as f64 / result.memories.max(1) as f64 / 1024.0,
            result.smallest,
            result.largest
        ),
    );
    let put_seconds = result.put_elapsed.as_secs_f64().max(1e-9);
    let put_p50 = Percentiles::of(&mut result.put_latencies).p50;
    report.info(
        format!(
            "Raw `POST /v1/memories` of them, {} clients",
            result.clients
        ),
        format!(
            "{} ({:.0}/s, {:.1} MB/s; p50 {:.1} ms)",
            secs(result.put_elapsed),
            result.memories as f64 / put_seconds,
            mb(result.bytes) / put_seconds,
            ms(put_p50)
        ),
    );
    report.check(
        "Search memories not answered 201",
        result.put_errors.to_string(),
        "0",
        result.put_errors == 0,
    );
    report.info(
        "Index throughput: content put ÷ time from the first put to an empty index queue",
        format!(
            "{:.1} MB/s ({:.1} MB in {})",
            mb(result.bytes) / result.indexed_after.as_secs_f64().max(1e-9),
            mb(result.bytes),
            secs(result.indexed_after)
        ),
    );
    let (objects, bytes) = result.pending_at_last_put;
    report.info(
        "Index caught up after the last put answered",
        format!(
            "≤ {} (the queue emptied in its last {}; queue at the last put {objects} objects, {:.1} MB; longest seen {:.1} MB)",
            secs(result.catch_up),
            secs(result.resolution),
            mb(bytes),
            mb(result.peak_pending_bytes)
        ),
    );
    report.info(
        "Server quiet (< 0.05 cores over 1 s) before the idle round, after the index caught up",
        if result.settled {
            format!(
                "after {} (background work such as index merges)",
                secs(result.settled_after)
            )
        } else {
            format!(
                "not within {}: the idle round ran beside it",
                secs(search::SETTLE_AT_MOST)
            )
        },
    );

    let count = result.samples.len();
    let postgres = std::env::var("CAIRN_DATABASE_URL").is_ok_and(|url| url.starts_with("postgres"));
    let (p50_max, backend) = if postgres {
        (SEARCH_P50_MAX_MS_POSTGRES, "PostgreSQL")
    } else {
        (SEARCH_P50_MAX_MS, "SQLite")
    };
    let what = format!(
        "`GET /v1/search` (limit {}) over {} memories ({backend})",
        search::LIMIT,
        result.memories_searched
    );
    for loaded in [false, true] {
        let round: Vec<&search::Sample> = result
            .samples
            .iter()
            .filter(|s| s.loaded == loaded)
            .collect();
        if round.is_empty() {
            continue;
        }
        let when = match (&result.background, loaded) {
            (Some(b), true) => format!("while {} puts/s go on", b.rate),
            _ => "idle".to_owned(),
        };
        let mut all: Vec<Duration> = round.iter().map(|s| s.latency).collect();
        let p = Percentiles::of(&mut all);
        report.info(
            format!(
                "{what}, {when}: p50 / p90 / p99 / max ({} sequential GETs, all kinds)",
                round.len()
            ),
            format!(
                "{:.2} / {:.2} / {:.2} / {:.2} ms",
                ms(p.p50),
                ms(p.p90),
                ms(p.p99),
                ms(p.max)
            ),
        );
        for kind in QueryKind::ALL {
            let of_kind: Vec<_> = round.iter().filter(|s| s.kind == kind).collect();
            let found = of_kind.iter().filter(|s| s.results > 0).count();
            let mut latencies: Vec<Duration> = of_kind.iter().map(|s| s.latency).collect();
            let p = Percentiles::of(&mut latencies);
            report.check(
                format!(
                    "Search {when}, {}, {} queries: p50 / p99 (max; share with ≥ 1 result)",
                    kind.describe(),
                    of_kind.len()
                ),
                format!(
                    "{:.2} / {:.2} ms ({:.2} ms; {:.0}%)",
                    ms(p.p50),
                    ms(p.p99),
                    ms(p.max),
                    percent(found, of_kind.len())
                ),
                if postgres {
                    format!("p50 < {p50_max} ms")
                } else {
                    format!("< {p50_max} / < {SEARCH_P99_MAX_MS} ms")
                },
                ms(p.p50) < p50_max && (postgres || ms(p.p99) < SEARCH_P99_MAX_MS),
            );
        }
    }
    if let Some(b) = &result.background {
        let seconds = b.elapsed.as_secs_f64().max(1e-9);
        let mut latencies = b.latencies.clone();
        let p = Percentiles::of(&mut latencies);
        report.info(
            format!(
                "Puts during the second round of searches (each new content for the indexer; \
                 the round stops after {} s)",
                search::LOADED_FOR.as_secs()
            ),
            format!(
                "{} in {} ({:.0}/s of {}/s asked; p50 {:.1} ms, p99 {:.1} ms)",
                b.done,
                secs(b.elapsed),
                b.done as f64 / seconds,
                b.rate,
                ms(p.p50),
                ms(p.p99)
            ),
        );
        report.check(
            "Puts not answered 201 during the searches",
            b.errors.to_string(),
            "0",
            b.errors == 0,
        );
    }
    let found = result.samples.iter().filter(|s| s.results > 0).count();
    report.check(
        "Searches with ≥ 1 result",
        format!("{:.1}% ({found} of {count})", percent(found, count)),
        "> 0",
        found > 0,
    );
    report.check(
        "Search answers not 200 with results",
        result.errors.to_string(),
        "0",
        result.errors == 0,
    );
    let polled = result.indexed_after.as_secs_f64().max(1e-9);
    report.note(format!(
        "The index throughput covers puts and indexing together: the background indexer \
         runs while the puts go on and shares the CPUs with them (server {:.2} cores, \
         benchmark client {:.2} cores on average from the first put to the index caught up). \
         The queue is read from `/v1/stats` (`search_index.pending_objects`), which grows \
         costly with the namespace, so each look waits at least {} ms and {}× as long as the \
         previous look took: {} looks, {:.1} ms each on average ({:.0}% of the time); \
         the index caught up at most one pause before the look that saw it so.",
        result.cpu.server_cores,
        result.cpu.client_cores,
        search::POLL.as_millis(),
        search::POLL_SHARE,
        result.polls,
        ms(result.poll_time) / f64::from(result.polls.max(1)),
        100.0 * result.poll_time.as_secs_f64() / polled
    ));
    if result.memories_before > 0 {
        report.note(format!(
            "The namespace already held {} memories of earlier measures (searched too); \
             their indexing took {} more before the search puts started.",
            result.memories_before,
            secs(result.waited_before)
        ));
    }
    let examples: Vec<String> = result
        .examples
        .iter()
        .map(|(kind, queries)| {
            let quoted: Vec<String> = queries.iter().map(|q| format!("`{q}`")).collect();
            format!("{}: {}", kind.name(), quoted.join(", "))
        })
        .collect();
    report.note(format!(
        "Queries are drawn with the seed from the stored memories' words, the kinds in turn; \
         the first measured of each kind: {}.",
        examples.join("; ")
    ));
    for loaded in [false, true] {
        let mut round: Vec<&search::Sample> = result
            .samples
            .iter()
            .filter(|s| s.loaded == loaded)
            .collect();
        round.sort_by_key(|s| std::cmp::Reverse(s.latency));
        if round.is_empty() {
            continue;
        }
        let slowest: Vec<String> = round
            .iter()
            .take(SLOWEST_SHOWN)
            .map(|s| format!("`{}` {:.1} ms", s.query, s.latency.as_secs_f64() * 1e3))
            .collect();
        let when = if loaded {
            "while the puts went on"
        } else {
            "idle"
        };
        report.note(format!("Slowest searches {when}: {}.", slowest.join(", ")));
        // Every query is drawn from a stored memory: one that finds nothing
        // is worth a look.
        let empty: Vec<String> = round
            .iter()
            .filter(|s| s.results == 0)
            .take(EMPTY_SHOWN)
            .map(|s| format!("`{}`", s.query))
            .collect();
        if !empty.is_empty() {
            report.note(format!(
                "Searches {when} that found nothing (first {EMPTY_SHOWN} at most): {}.",
                empty.join(", ")
            ));
        }
    }
    for sample in &result.error_samples {
        report.note(format!("Search error: {sample}"));
    }
}

/// Slowest searches the notes name, per round.
const SLOWEST_SHOWN: usize = 8;
/// Searches without results the notes name, per round.
const EMPTY_SHOWN: usize = 8;

fn percent(part: usize, whole: usize) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

fn cpu_note(report: &mut Report, during: &str, cpu: &CpuUse) {
    report.note(format!(
        "CPU during {during}: server {:.2} cores, benchmark client {:.2} cores (average).",
        cpu.server_cores, cpu.client_cores
    ));
}

fn stored_ratio(report: &mut Report, measure: &str, stored: &Stored) {
    let ratio = stored.stored_bytes as f64 / stored.bytes.max(1) as f64;
    report.info(
        measure,
        format!(
            "{ratio:.3} ({:.2}× smaller; {} of {})",
            1.0 / ratio.max(1e-9),
            mib(stored.stored_bytes),
            mib(stored.bytes)
        ),
    );
}

fn content_matches(
    report: &mut Report,
    measure: &str,
    stored: &Stored,
    sha256: Option<&str>,
    bytes: u64,
    lines: u64,
) {
    let mut problems = Vec::new();
    if let Some(sha256) = sha256
        && stored.id != sha256
    {
        problems.push(format!("id {} is not the SHA-256 {sha256}", stored.id));
    }
    if stored.bytes != bytes {
        problems.push(format!("bytes {} but {bytes} were sent", stored.bytes));
    }
    if stored.lines != lines {
        problems.push(format!("lines {} but {lines} were sent", stored.lines));
    }
    if stored.deduplicated {
        problems.push("answered as deduplicated".to_owned());
    }
    report.check(
        measure,
        if problems.is_empty() { "yes" } else { "no" },
        "yes",
        problems.is_empty(),
    );
    for problem in problems {
        report.note(format!("{measure}: {problem}"));
    }
}

/// A byte count in MiB (or GiB from 1 GiB).
pub fn mib(bytes: u64) -> String {
    if bytes >= 1024 * MIB {
        format!("{:.2} GiB", bytes as f64 / (1024 * MIB) as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    }
}

fn secs(duration: Duration) -> String {
    format!("{:.2} s", duration.as_secs_f64())
}
