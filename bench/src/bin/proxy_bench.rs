//! The LLM proxy's added latency and savings: the same requests sent to a
//! stand-in upstream directly and through Cairn's proxy, alternating, in one
//! run (the machine is shared and noisy, so only ratios and differences in
//! the same run count). Prints a Markdown section and writes it into
//! bench/REPORT.md between `<!-- proxy -->` markers.
//!
//! `cargo run --release -p cairn-bench --bin proxy_bench`
//!
//! `PROXY_BENCH_CPU_ONLY=N` runs only the CPU measure of the ten-piece
//! requests, over N of them, and prints it (for `perf record`).

#![allow(dead_code)]

/// The bench's text generator, shared with the main bench binary.
#[path = ".."]
mod shared {
    pub mod generate;
    pub mod marked;
    pub mod procfs;
}

use shared::generate;

/// The allocator the `cairn` binary ships with (src/main.rs, with the
/// settings of .cargo/config.toml), so that the proxy measured here
/// allocates as the served one does.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::time::{Duration, Instant};

use anyhow::Context;
use axum::Router;
use axum::routing::post;
use serde_json::{Value, json};

/// Requests of each kind measured through each path.
const RUNS: usize = 200;
/// Requests with new tool results (each stores ten 50 KB pieces).
const OFFLOAD_RUNS: usize = 60;
/// Requests of the CPU measure, through a Cairn without a search index.
const CPU_RUNS: usize = 40;
/// The target for the ten new pieces, added p50 (issue 36).
const OFFLOAD_TARGET_MS: f64 = 8.0;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let upstream = stand_in().await?;
    let dir = tempfile_dir()?;
    let cairn = serve_cairn(&dir.join("on"), &upstream, true, true).await?;
    let cairn_off = serve_cairn(&dir.join("off"), &upstream, false, true).await?;
    let no_index = serve_cairn(&dir.join("no-index"), &upstream, true, false).await?;
    let client = reqwest::Client::new();
    let direct = format!("{upstream}/v1/chat/completions");
    // `PROXY_BENCH_CPU_ONLY=N`: only the CPU measure, over N requests (to
    // run under `perf record`, which then sees the ten-piece path alone).
    if let Some(runs) = std::env::var("PROXY_BENCH_CPU_ONLY")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
    {
        let floor = cpu_per_offload(
            &client,
            &format!("{no_index}/v1/chat/completions"),
            &direct,
            runs,
        )
        .await?;
        let (via, direct) = (p50_p99(&floor.via), p50_p99(&floor.direct));
        println!(
            "{runs} requests: through Cairn p50 {:.2} ms, direct {:.2} ms, Cairn's CPU {:.1} ms a request",
            via.0, direct.0, floor.cairn_cpu_ms
        );
        return Ok(());
    }

    // 0. First, while nothing else has run: Cairn's own CPU per request with
    // ten new pieces, through a Cairn without a search index.
    let floor = cpu_per_offload(
        &client,
        &format!("{no_index}/v1/chat/completions"),
        &direct,
        CPU_RUNS,
    )
    .await?;
    let proxied = format!("{cairn}/v1/chat/completions");
    let proxied_off = format!("{cairn_off}/v1/chat/completions");

    // 1. 100 messages, nothing to offload.
    let small = json!({"model": "gpt-4.1", "messages": plain_conversation(100)}).to_string();
    for _ in 0..20 {
        call(&client, &proxied, &small).await?;
        call(&client, &proxied_off, &small).await?;
        call(&client, &direct, &small).await?;
    }
    let (mut via, mut via_off, mut straight) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        via.push(call(&client, &proxied, &small).await?.0);
        via_off.push(call(&client, &proxied_off, &small).await?.0);
        straight.push(call(&client, &direct, &small).await?.0);
    }
    let plain = Row::new("100 messages, nothing to offload", &via, &straight, 2.0);
    let plain_off = Row::new(
        "the same, exchange ledger off (`CAIRN_EXCHANGES=false`)",
        &via_off,
        &straight,
        2.0,
    );

    // 2. Ten new 50 KB tool results in each request (new content: ten puts).
    let (mut via, mut via_off, mut straight) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..OFFLOAD_RUNS + 5 {
        let body =
            json!({"model": "gpt-4.1", "messages": tool_conversation(run as u64)}).to_string();
        let (a, headers) = call(&client, &proxied, &body).await?;
        let off_body =
            json!({"model": "gpt-4.1", "messages": tool_conversation(1_000 + run as u64)})
                .to_string();
        let (c, _) = call(&client, &proxied_off, &off_body).await?;
        let (b, _) = call(&client, &direct, &body).await?;
        if run >= 5 {
            via.push(a);
            via_off.push(c);
            straight.push(b);
        }
        if run == 5 {
            anyhow::ensure!(
                headers
                    .get("x-cairn-offloaded")
                    .and_then(|v| v.to_str().ok())
                    == Some("10"),
                "the proxy did not offload the ten results: {headers:?}"
            );
        }
    }
    let offload = Row::new(
        "ten new 50 KB tool results",
        &via,
        &straight,
        OFFLOAD_TARGET_MS,
    );
    let offload_off = Row::new(
        "the same, exchange ledger off",
        &via_off,
        &straight,
        OFFLOAD_TARGET_MS,
    );
    let offload_no_index = Row::new(
        "the same, search index off (`CAIRN_SEARCH_INDEX=false`), measured first, not alternating",
        &floor.via,
        &floor.direct,
        OFFLOAD_TARGET_MS,
    );

    // 3. Tokens before and after on the compress benchmark's transcript.
    let transcript = generate::transcript::transcript(42);
    let body = json!({"model": "gpt-4.1", "messages": transcript}).to_string();
    let (_, headers) = call(&client, &proxied, &body).await?;
    let header = |name: &str| -> u64 {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let (before, after) = (
        header("x-cairn-tokens-before"),
        header("x-cairn-tokens-after"),
    );

    let section = render(
        &[plain, plain_off, offload, offload_off, offload_no_index],
        &floor,
        before,
        after,
        body.len(),
    );
    println!("{section}");
    shared::marked::write_section("proxy", &section)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A Cairn proxy in front of `upstream` with its data in `dir`, the
/// exchange ledger and the search index on or off; answers its base URL.
async fn serve_cairn(
    dir: &std::path::Path,
    upstream: &str,
    ledger: bool,
    search_index: bool,
) -> anyhow::Result<String> {
    let mut config = cairn::config::Config::with_data_dir(dir);
    config.upstream_openai_url = Some(format!("{upstream}/v1"));
    config.exchanges = ledger;
    config.search_index = search_index;
    let app = cairn::app::App::build(&config).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let router = app.router();
    tokio::spawn(async move {
        let _app = app;
        let _ = cairn::http::serve(listener, router, std::future::pending()).await;
    });
    Ok(base)
}

/// Latencies and CPU of the ten-new-pieces requests through a Cairn without
/// a search index, and of the same requests sent straight.
struct Floor {
    via: Vec<Duration>,
    direct: Vec<Duration>,
    /// This process's CPU per request through Cairn, less per request sent
    /// straight (the client and the stand-in): Cairn's own work.
    cairn_cpu_ms: f64,
}

/// `runs` requests with ten new pieces each through `proxied` (after
/// five to warm up), then the same bodies straight to `direct`, this
/// process's CPU time read around each loop. The bodies are made first, so
/// that only the requests are measured.
async fn cpu_per_offload(
    client: &reqwest::Client,
    proxied: &str,
    direct: &str,
    runs: usize,
) -> anyhow::Result<Floor> {
    let bodies: Vec<String> = (0..runs + 5)
        .map(|run| {
            json!({"model": "gpt-4.1", "messages": tool_conversation(5_000 + run as u64)})
                .to_string()
        })
        .collect();
    let (warm, measured) = bodies.split_at(5);
    for body in warm {
        call(client, proxied, body).await?;
        call(client, direct, body).await?;
    }
    let (mut via, mut straight) = (Vec::new(), Vec::new());
    let started = shared::procfs::cpu_time("self")?;
    for body in measured {
        via.push(call(client, proxied, body).await?.0);
    }
    let through = shared::procfs::cpu_time("self")? - started;
    let started = shared::procfs::cpu_time("self")?;
    for body in measured {
        straight.push(call(client, direct, body).await?.0);
    }
    let alone = shared::procfs::cpu_time("self")? - started;
    let per = |cpu: Duration| cpu.as_secs_f64() * 1e3 / runs as f64;
    Ok(Floor {
        via,
        direct: straight,
        cairn_cpu_ms: per(through) - per(alone),
    })
}

/// One timed POST; answers its latency and the answer's headers.
async fn call(
    client: &reqwest::Client,
    url: &str,
    body: &str,
) -> anyhow::Result<(Duration, reqwest::header::HeaderMap)> {
    let started = Instant::now();
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-bench")
        .body(body.to_owned())
        .send()
        .await
        .with_context(|| format!("POST {url}"))?;
    let status = response.status();
    let headers = response.headers().clone();
    let answer = response.bytes().await?;
    let elapsed = started.elapsed();
    anyhow::ensure!(
        status.is_success(),
        "{url} answered {status}: {}",
        String::from_utf8_lossy(&answer)
    );
    Ok((elapsed, headers))
}

/// The stand-in provider: answers every chat completion with the same short answer.
async fn stand_in() -> anyhow::Result<String> {
    let answer = json!({"id": "chatcmpl-bench", "object": "chat.completion", "created": 1, "model": "gpt-4.1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 1, "total_tokens": 1001}})
    .to_string();
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |body: axum::body::Bytes| {
            let answer = answer.clone();
            async move {
                // Read the body as a provider would.
                let _parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                ([("content-type", "application/json")], answer)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(url)
}

/// `n` short chat messages (a system prompt, then user/assistant turns of ~200 characters).
fn plain_conversation(n: usize) -> Vec<Value> {
    let mut text = generate::TextGenerator::new(7);
    let mut messages = vec![json!({"role": "system", "content": "You are a coding agent."})];
    while messages.len() < n {
        let mut line = Vec::new();
        while line.len() < 200 {
            text.push_line(&mut line);
        }
        let role = if messages.len() % 2 == 1 {
            "user"
        } else {
            "assistant"
        };
        messages.push(
            json!({"role": role, "content": String::from_utf8_lossy(&line).trim().to_owned()}),
        );
    }
    messages
}

/// A conversation whose last turn brings ten new 50 KB tool results (seeded by `run`).
fn tool_conversation(run: u64) -> Vec<Value> {
    let mut messages = plain_conversation(20);
    messages.push(json!({"role": "user", "content": "Run the ten checks."}));
    let calls: Vec<Value> = (0..10)
        .map(|i| json!({"id": format!("call_{i}"), "type": "function", "function": {"name": "check", "arguments": "{}"}}))
        .collect();
    messages.push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
    let mut text = generate::TextGenerator::new(1000 + run);
    for i in 0..10 {
        let mut out = Vec::with_capacity(51_200);
        text.fill(&mut out, 50 << 10);
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{i}"),
            "content": String::from_utf8_lossy(&out).into_owned()}));
    }
    messages
}

/// One workload: latencies through the proxy and straight to the stand-in.
struct Row {
    name: &'static str,
    via: (f64, f64),
    direct: (f64, f64),
    target_ms: f64,
}

impl Row {
    fn new(name: &'static str, via: &[Duration], direct: &[Duration], target_ms: f64) -> Self {
        Self {
            name,
            via: p50_p99(via),
            direct: p50_p99(direct),
            target_ms,
        }
    }

    fn added(&self) -> (f64, f64) {
        (self.via.0 - self.direct.0, self.via.1 - self.direct.1)
    }
}

fn p50_p99(samples: &[Duration]) -> (f64, f64) {
    let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.99))
}

fn render(rows: &[Row], floor: &Floor, before: u64, after: u64, body_bytes: usize) -> String {
    let mut out = String::from(
        "<!-- proxy -->\n## LLM proxy\n\n`cargo run --release -p cairn-bench --bin proxy_bench`: the same chat-completion \
requests sent straight to a stand-in upstream (an in-process axum server answering a fixed completion) and through \
Cairn's proxy, alternating, in one run; added = through Cairn − direct, per percentile.\n\n\
| request | direct p50 / p99 | through Cairn p50 / p99 | added p50 / p99 | target (added p50) |\n| --- | --- | --- | --- | --- |\n",
    );
    for row in rows {
        let (a50, a99) = row.added();
        out.push_str(&format!(
            "| {} | {:.2} / {:.2} ms | {:.2} / {:.2} ms | **{:.2} / {:.2} ms** | ≤ {} ms: {} |\n",
            row.name,
            row.direct.0,
            row.direct.1,
            row.via.0,
            row.via.1,
            a50,
            a99,
            row.target_ms,
            if a50 <= row.target_ms {
                "met"
            } else {
                "missed"
            }
        ));
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    out.push_str(&format!(
        "\nCairn's own CPU per request with ten new pieces, search index off: **{:.1} ms** (this process's CPU \
over {CPU_RUNS} such requests through Cairn, less the same {CPU_RUNS} sent straight; 10 ms clock ticks): spread \
perfectly over this machine's {cores} cores, that work alone takes {:.1} ms per request.\n",
        floor.cairn_cpu_ms,
        floor.cairn_cpu_ms / cores as f64,
    ));
    let saved = before.saturating_sub(after);
    out.push_str(&format!(
        "\nThe compress benchmark's transcript (100 messages, 32 tool results of 18 KiB, {} KiB of JSON) through the proxy: \
{before} tokens before, {after} after ({saved} saved, {:.1} %), `x-cairn-tokens-before`/`-after`, exact o200k_base counts.\n\n\
For scale: Headroom's published proxy overhead from its own telemetry is p50 52 ms, p99 4.2 s (not measured here).\n<!-- /proxy -->\n",
        body_bytes >> 10,
        if before > 0 { saved as f64 * 100.0 / before as f64 } else { 0.0 }
    ));
    out
}

fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("cairn-proxy-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
