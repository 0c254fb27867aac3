//! The run: start the server, then each measure not skipped, in order,
//! recording into the report; a failed measure is reported and the run goes on
//! unless the server itself has died.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::api::Api;
use crate::measure::puts::PutLoad;
use crate::measure::search::SearchLoad;
use crate::measure::{big_upload, compress, ingest, puts, search, slices};
use crate::report::Report;
use crate::server::Server;
use crate::{Cli, Measure, Scale, corpus, judge, workspace};

/// How long the server gets to stop on SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// A stored memory to take slices from.
struct SliceSource {
    id: String,
    lines: u64,
    /// What it is, for the report ("the 1.00 GiB upload").
    what: String,
}

/// Starts the server and runs every measure not skipped, recording into `report`.
pub async fn bench(
    cli: &Cli,
    scale: &Scale,
    dir: &Path,
    run_id: &str,
    report: &mut Report,
) -> anyhow::Result<()> {
    let (mut server, api) = start_server(cli, dir, report).await?;
    // Slices come from the big upload's memory, else from the ingest file's.
    let mut source = None;
    if cli.runs(Measure::Ingest) {
        source = ingest_phase(cli, scale, dir, &api, server.pid(), report).await;
        ensure_alive(&mut server)?;
    }
    if cli.runs(Measure::Big) {
        source = big_upload_phase(cli, scale, &api, server.pid(), report)
            .await
            .or(source);
        ensure_alive(&mut server)?;
    }
    if cli.runs(Measure::Slices) {
        match &source {
            Some(source) => slice_phase(cli, scale, &api, source, report).await,
            None => report.note("Slices skipped: no large memory was stored."),
        }
        ensure_alive(&mut server)?;
    }
    if cli.runs(Measure::Puts) {
        put_phase(cli, scale, &api, server.pid(), run_id, report).await;
        ensure_alive(&mut server)?;
    }
    if cli.runs(Measure::Compress) {
        match compress::run(&api, cli.seed, usize::from(cli.compress_repeats)).await {
            Ok(mut result) => judge::compress(report, &mut result),
            Err(e) => report.failed("Compress", &e),
        }
        ensure_alive(&mut server)?;
    }
    if cli.runs(Measure::Search) {
        search_phase(cli, scale, &api, server.pid(), report).await;
        ensure_alive(&mut server)?;
    }

    let problems = server.log_problems(10);
    if !problems.is_empty() {
        report.note(format!(
            "Server log warnings/errors (first {}):\n{}",
            problems.len(),
            problems.join("\n")
        ));
    }
    let stopped = server.stop(STOP_GRACE).await?;
    report.note(format!("Server {stopped}."));
    Ok(())
}

/// Starts the server under `dir` and describes it in the report.
async fn start_server(cli: &Cli, dir: &Path, report: &mut Report) -> anyhow::Result<(Server, Api)> {
    let binary = cli
        .server
        .clone()
        .unwrap_or_else(|| workspace().join("target/release/cairn"));
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(usize::from(cli.put_clients))
        .build()
        .context("cannot build the HTTP client")?;
    eprintln!("starting {}…", binary.display());
    let server = Server::start(
        &binary,
        &dir.join("server"),
        &dir.join("server.log"),
        &client,
    )
    .await?;
    report.fact(
        "Server",
        format!(
            "cairn {} ({}, pid {})",
            server.version,
            binary.display(),
            server.pid()
        ),
    );
    let environment: Vec<String> = std::env::vars()
        .map(|(name, _)| name)
        .filter(|name| name.starts_with("CAIRN_") && name != "CAIRN_API_KEYS")
        .collect();
    if !environment.is_empty() {
        report.fact("Server environment (names)", environment.join(", "));
    }
    let api = Api {
        client,
        base_url: server.base_url.clone(),
    };
    Ok((server, api))
}

async fn ingest_phase(
    cli: &Cli,
    scale: &Scale,
    dir: &Path,
    api: &Api,
    pid: u32,
    report: &mut Report,
) -> Option<SliceSource> {
    match ingest::run(api, pid, &cli.zstd, dir, scale.ingest_bytes, cli.seed).await {
        Ok(result) => {
            judge::ingest(report, &result);
            Some(SliceSource {
                id: result.stored.id,
                lines: result.stored.lines,
                what: format!("the {} ingest file", judge::mib(result.file_bytes)),
            })
        }
        Err(e) => {
            report.failed("Ingest", &e);
            None
        }
    }
}

async fn big_upload_phase(
    cli: &Cli,
    scale: &Scale,
    api: &Api,
    pid: u32,
    report: &mut Report,
) -> Option<SliceSource> {
    match big_upload::run(api, pid, scale.big_bytes, cli.seed + 1).await {
        Ok(result) => {
            judge::big_upload(report, &result);
            Some(SliceSource {
                id: result.stored.id,
                lines: result.stored.lines,
                what: format!("the {} upload", judge::mib(result.bytes)),
            })
        }
        Err(e) => {
            report.failed("Big upload", &e);
            None
        }
    }
}

async fn slice_phase(
    cli: &Cli,
    scale: &Scale,
    api: &Api,
    source: &SliceSource,
    report: &mut Report,
) {
    let measured = slices::run(
        &api.base_url,
        &source.id,
        source.lines,
        cli.slice_warmup,
        scale.slices,
        cli.seed,
    )
    .await;
    match measured {
        Ok(mut result) => judge::slices(report, &mut result, &source.what),
        Err(e) => report.failed("Slices", &e),
    }
}

async fn put_phase(
    cli: &Cli,
    scale: &Scale,
    api: &Api,
    pid: u32,
    run_id: &str,
    report: &mut Report,
) {
    let load = PutLoad {
        clients: usize::from(cli.put_clients),
        duration: scale.put_duration,
        content_bytes: cli.put_bytes as usize,
        body: cli.put_body,
        seed: cli.seed,
    };
    match puts::run(api, pid, load, run_id).await {
        Ok(mut result) => judge::puts(report, &mut result, &load),
        Err(e) => report.failed("Puts", &e),
    }
}

async fn search_phase(cli: &Cli, scale: &Scale, api: &Api, pid: u32, report: &mut Report) {
    let load = SearchLoad {
        memories: scale.search_memories,
        clients: usize::from(cli.search_clients),
        warmup: cli.search_warmup,
        searches: scale.searches,
        seed: cli.seed,
        put_rate: cli.search_put_rate,
    };
    let roots = if cli.search_roots.is_empty() {
        corpus::default_roots()
    } else {
        cli.search_roots.clone()
    };
    let measured = async {
        eprintln!("search: cutting {} pieces of real text…", load.memories);
        let pieces =
            tokio::task::spawn_blocking(move || search::pieces(&roots, load.memories)).await??;
        search::run(api, pid, pieces, load).await
    }
    .await;
    match measured {
        Ok(mut result) => judge::search(report, &mut result),
        Err(e) => report.failed("Search", &e),
    }
}

/// Fails, quoting the end of the server log, when the server has exited.
fn ensure_alive(server: &mut Server) -> anyhow::Result<()> {
    if let Err(e) = server.check_alive() {
        let tail = server.log_tail(20).join("\n");
        bail!("{e:#}; the end of its log:\n{tail}");
    }
    Ok(())
}
