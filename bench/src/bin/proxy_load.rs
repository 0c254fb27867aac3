//! The LLM proxy under load: many concurrent agent conversations, streamed
//! and not, each turn carrying a new 50 KB tool result that Cairn offloads
//! and a retrieval round Cairn resolves, against a stand-in provider with a
//! provider's latency (head after 300 ms–2 s, streamed answers over a
//! second). The same load goes straight to the stand-in first (without
//! Cairn there is no pointer, so no retrieval round), then through a Cairn
//! release server started here, whose memory is read from `/proc` the whole
//! time.
//!
//! Added latency is measured against what the stand-in itself took:
//! at the first byte of a streamed turn, the client's head latency minus the
//! stand-in's delay before the first round's head; for a JSON turn, the
//! client's whole latency minus every round's time inside the stand-in.
//!
//! `cargo build --release -p cairn && cargo run --release -p cairn-bench --bin proxy_load -- [--conversations 200] [--turns 3] [--minutes 0] [--rest 0]`
//! (`--minutes N`: keep conversations going for N minutes, a soak; RSS is
//! sampled every second and its slope reported — over the whole run, and
//! from the 5th minute on by kind, anonymous and file-backed, once the caches
//! are full; `--rest N`: N REST clients
//! put, read, search and grep beside the proxied load). Writes its section of
//! bench/REPORT.md between `<!-- proxy_load -->` markers.

#![allow(dead_code)]

#[path = ".."]
mod shared {
    pub mod cgroup;
    pub mod marked;
    pub mod procfs;
}

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::Router;
use axum::body::Body;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use clap::Parser;
use serde_json::{Value, json};

#[derive(Parser)]
struct Args {
    /// Conversations at once.
    #[arg(long, default_value_t = 200)]
    conversations: usize,
    /// Turns per conversation (each with a new 50 KB tool result).
    #[arg(long, default_value_t = 3)]
    turns: usize,
    /// Keep conversations going this long (0: one pass of `turns`); each
    /// slot starts a new conversation after `turns` turns.
    #[arg(long, default_value_t = 0)]
    minutes: u64,
    /// Measure through Cairn only (a soak: the direct run is its baseline
    /// latency, not needed for Cairn's memory).
    #[arg(long)]
    skip_direct: bool,
    /// The Cairn binary.
    #[arg(long, default_value = "target/release/cairn")]
    cairn: String,
    /// REST clients beside the proxied conversations (through Cairn only):
    /// each, until the load ends, puts a new ~20 KB memory, reads a line
    /// slice of it, searches one of its words and greps it, then rests
    /// 250 ms.
    #[arg(long, default_value_t = 0)]
    rest: usize,
    /// Start Cairn in a memory cgroup of this many MiB (as a container's
    /// memory limit; root and a cgroup v1 or v2 memory controller needed)
    /// and report what the kernel did there: its peak charge, reclaims at
    /// the limit and OOM kills. Written to a section of its own.
    #[arg(long)]
    memory_limit_mib: Option<u64>,
}

/// What the stand-in spent on each turn: the delay before its first round's
/// head and the time of every round, keyed by `x-bench-turn`.
#[derive(Default)]
struct Spent {
    first_delay: HashMap<String, Duration>,
    total: HashMap<String, Duration>,
}

type Ledger = Arc<Mutex<Spent>>;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let spent: Ledger = Arc::default();
    let upstream = stand_in(spent.clone()).await?;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.conversations)
        .build()?;

    let direct = if args.skip_direct {
        Run::default()
    } else {
        run_load(
            &client,
            &format!("{upstream}/v1"),
            &args,
            &spent,
            None,
            None,
        )
        .await?
    };

    let dir = std::env::temp_dir().join(format!("cairn-proxy-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let port = free_port()?;
    let group = args
        .memory_limit_mib
        .map(|mib| {
            shared::cgroup::MemoryGroup::create(
                &format!("cairn-proxy-load-{}", std::process::id()),
                mib << 20,
            )
        })
        .transpose()?;
    // In a group, a shell joins it and then becomes Cairn: every byte
    // Cairn ever holds is charged there.
    let mut command = match &group {
        Some(group) => {
            let mut sh = tokio::process::Command::new("sh");
            sh.arg("-c")
                .arg(r#"echo $$ > "$0" && exec "$@""#)
                .arg(group.procs())
                .arg(&args.cairn);
            sh
        }
        None => tokio::process::Command::new(&args.cairn),
    };
    let mut child = command
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(&dir)
        .args(["--upstream-openai-url", &format!("{upstream}/v1")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {}", args.cairn))?;
    let pid = child.id().context("cairn exited")?;
    let cairn = format!("http://127.0.0.1:{port}");
    for _ in 0..100 {
        if client.get(format!("{cairn}/healthz")).send().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let idle_rss = shared::procfs::memory(pid)?.rss_kib;
    let through = run_load(
        &client,
        &format!("{cairn}/v1"),
        &args,
        &spent,
        Some(pid),
        Some(dir.clone()),
    )
    .await?;
    // What Cairn keeps once the load is over.
    tokio::time::sleep(Duration::from_secs(15)).await;
    // Read as 0 when Cairn is gone (killed for memory in a group): the
    // report still says what happened.
    let after_rss = shared::procfs::memory(pid).map_or(0, |m| m.rss_kib);
    // Still running, or killed (by the kernel, in a group) on the way.
    let exited = child.try_wait()?;
    let limited = group
        .as_ref()
        .map(|group| group.read().map(|reading| (reading, exited)))
        .transpose()?;
    let _ = child.kill().await;
    drop(group);
    let _ = std::fs::remove_dir_all(&dir);

    let section = render(&args, &direct, &through, idle_rss, after_rss, limited);
    println!("{section}");
    shared::marked::write_section(marker(&args), &section)?;
    Ok(())
}

/// Where Cairn's memory was at one moment.
struct MemorySample {
    /// Seconds since the load started.
    at: f64,
    /// Anonymous and file-backed resident memory, KiB.
    anon_kib: u64,
    file_kib: u64,
    /// jemalloc's live and resident bytes (`cairn_allocator_bytes`), when scraped.
    allocated: Option<u64>,
    resident: Option<u64>,
    /// The search index on disk: bytes and segments (10-s samples only).
    index: Option<(u64, usize)>,
}

/// jemalloc's allocated and resident bytes from Cairn's `/metrics`.
async fn allocator(client: &reqwest::Client, url: &str) -> (Option<u64>, Option<u64>) {
    let Ok(text) = async { client.get(url).send().await?.text().await }.await else {
        return (None, None);
    };
    let read = |state: &str| {
        let series = format!("cairn_allocator_bytes{{state=\"{state}\"}}");
        text.lines()
            .find_map(|line| line.strip_prefix(series.as_str()))
            .and_then(|rest| rest.trim().parse::<f64>().ok())
            .map(|bytes| bytes as u64)
    };
    (read("allocated"), read("resident"))
}

/// One load run's figures.
#[derive(Default)]
struct Run {
    turns: usize,
    errors: Vec<String>,
    /// Streamed turns: client head latency minus the stand-in's first delay.
    first_byte_added: Vec<Duration>,
    /// When each streamed turn's head came (seconds since the start), in
    /// the order of `first_byte_added`: the tail by time window.
    first_byte_at: Vec<f64>,
    /// JSON turns: client latency minus the stand-in's time over all rounds.
    whole_added: Vec<Duration>,
    /// Upstream rounds per turn (1 direct; 2 through Cairn: the retrieval).
    rounds: Vec<usize>,
    /// (seconds since start, RSS KiB) samples of Cairn.
    rss: Vec<(f64, u64)>,
    /// The same samples' anonymous and file-backed KiB, in the same order.
    rss_kinds: Vec<(u64, u64)>,
    /// Where Cairn's memory is, every 10 s.
    memory: Vec<MemorySample>,
    /// The 1-s sample with the highest RSS, by kind (no allocator figures).
    peak: Option<MemorySample>,
    /// REST calls made beside the load, their latencies and failures.
    rest: Vec<Duration>,
    /// When each REST call ended (seconds since the start), as `rest`.
    rest_at: Vec<f64>,
    rest_errors: Vec<String>,
    elapsed: Duration,
}

async fn run_load(
    client: &reqwest::Client,
    base: &str,
    args: &Args,
    spent: &Ledger,
    pid: Option<u32>,
    data_dir: Option<std::path::PathBuf>,
) -> anyhow::Result<Run> {
    let started = Instant::now();
    let deadline = (args.minutes > 0).then(|| started + Duration::from_secs(args.minutes * 60));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = pid.map(|pid| {
        let done = done.clone();
        let client = client.clone();
        let metrics = format!("{}/metrics", base.trim_end_matches("/v1"));
        let data_dir = data_dir.clone();
        tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut kinds = Vec::new();
            let mut memory = Vec::new();
            let mut peak: Option<MemorySample> = None;
            let mut peak_rss = 0;
            let mut tick = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(m) = shared::procfs::memory(pid) {
                    let at = started.elapsed().as_secs_f64();
                    samples.push((at, m.rss_kib));
                    kinds.push((m.anon_kib, m.file_kib));
                    if m.rss_kib > peak_rss {
                        peak_rss = m.rss_kib;
                        peak = Some(MemorySample {
                            at,
                            anon_kib: m.anon_kib,
                            file_kib: m.file_kib,
                            allocated: None,
                            resident: None,
                            index: None,
                        });
                    }
                    if tick.is_multiple_of(10) {
                        let (allocated, resident) = allocator(&client, &metrics).await;
                        memory.push(MemorySample {
                            at,
                            anon_kib: m.anon_kib,
                            file_kib: m.file_kib,
                            allocated,
                            resident,
                            index: data_dir.as_deref().map(index_on_disk),
                        });
                    }
                }
                tick += 1;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            (samples, kinds, memory, peak)
        })
    });
    let tag = if pid.is_some() { "cairn" } else { "direct" };
    let conversations = args.conversations;
    let tasks: Vec<_> = (0..args.conversations)
        .map(|c| {
            let client = client.clone();
            let base = base.to_owned();
            let turns = args.turns;
            let tag = tag.to_owned();
            // Starts spread over the first two seconds, as agents arrive.
            let start = Duration::from_millis((c as u64 * 2000) / conversations.max(1) as u64);
            tokio::spawn(async move {
                tokio::time::sleep(start).await;
                conversation(&client, &base, c, turns, deadline, &tag, started).await
            })
        })
        .collect();
    let rest: Vec<_> = if pid.is_some() {
        (0..args.rest)
            .map(|r| {
                let client = client.clone();
                let base = base.to_owned();
                let done = done.clone();
                tokio::spawn(async move { rest_client(&client, &base, r, &done, started).await })
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut run = Run::default();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.extend(task.await?);
    }
    run.elapsed = started.elapsed();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    for task in rest {
        let (latencies, errors) = task.await?;
        for (at, took) in latencies {
            run.rest_at.push(at);
            run.rest.push(took);
        }
        run.rest_errors.extend(errors);
    }
    if let Some(sampler) = sampler {
        (run.rss, run.rss_kinds, run.memory, run.peak) = sampler.await?;
    }
    let spent = spent.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    for outcome in outcomes {
        run.turns += 1;
        match outcome {
            Err(e) => run.errors.push(e),
            Ok(t) => {
                let first = spent.first_delay.get(&t.key).copied().unwrap_or_default();
                let total = spent.total.get(&t.key).copied().unwrap_or_default();
                if t.stream {
                    run.first_byte_added.push(t.head.saturating_sub(first));
                    run.first_byte_at.push(t.at);
                } else {
                    run.rounds.push(t.rounds);
                    run.whole_added.push(t.whole.saturating_sub(total));
                }
            }
        }
    }
    Ok(run)
}

/// One turn as the client saw it.
struct Turn {
    key: String,
    stream: bool,
    head: Duration,
    whole: Duration,
    rounds: usize,
    /// When its head came, seconds since the load started.
    at: f64,
}

/// A conversation: turn after turn, each adding an assistant call and a new
/// 50 KB tool result to the history.
async fn conversation(
    client: &reqwest::Client,
    base: &str,
    c: usize,
    turns: usize,
    deadline: Option<Instant>,
    tag: &str,
    started: Instant,
) -> Vec<Result<Turn, String>> {
    let stream = c.is_multiple_of(2);
    let opening = |turn: usize| {
        vec![
            json!({"role": "user", "content": format!("conversation {c}.{}: fix the build", turn / turns.max(1))}),
        ]
    };
    let mut messages = opening(0);
    let mut out = Vec::new();
    let mut turn = 0;
    loop {
        let more = match deadline {
            Some(deadline) => Instant::now() < deadline,
            None => turn < turns,
        };
        if !more {
            break;
        }
        if turn > 0 && turn % turns.max(1) == 0 {
            // A soak: this slot's next conversation.
            messages = opening(turn);
        }
        let call_id = format!("call_{c}_{turn}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "run", "arguments": "{}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": output(c, turn)}));
        let key = format!("{tag}-{c}-{turn}");
        let body = json!({"model": "gpt-4.1", "stream": stream, "messages": messages,
            "tools": [{"type": "function", "function": {"name": "run", "parameters": {"type": "object"}}}]});
        let result = one_turn(client, base, &key, stream, &body, started).await;
        if let Ok((_, text)) = &result {
            messages.push(json!({"role": "assistant", "content": text}));
            messages.push(json!({"role": "user", "content": "go on"}));
        }
        out.push(result.map(|(t, _)| t));
        turn += 1;
    }
    out
}

async fn one_turn(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    stream: bool,
    body: &Value,
    load_started: Instant,
) -> Result<(Turn, String), String> {
    let started = Instant::now();
    let response = client
        .post(format!("{base}/chat/completions"))
        .header("authorization", "Bearer sk-load")
        .header("x-bench-turn", key)
        .json(body)
        .send()
        .await
        .map_err(|e| format!("send: {e}"))?;
    let head = started.elapsed();
    let at = load_started.elapsed().as_secs_f64();
    let status = response.status();
    let rounds = response
        .headers()
        .get("x-cairn-rounds")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .map_or(1, |r| r + 1);
    let text = response.text().await.map_err(|e| format!("body: {e}"))?;
    let whole = started.elapsed();
    if !status.is_success() {
        return Err(format!(
            "{status}: {}",
            text.chars().take(200).collect::<String>()
        ));
    }
    if stream && !text.contains("[DONE]") {
        return Err("stream without [DONE]".into());
    }
    Ok((
        Turn {
            key: key.to_owned(),
            stream,
            head,
            whole,
            rounds,
            at,
        },
        "done".to_owned(),
    ))
}

/// A REST client beside the proxied load, until `done`: put a new memory,
/// read lines 10–30 of it, search one of its words, grep it; rest 250 ms.
async fn rest_client(
    client: &reqwest::Client,
    base: &str,
    r: usize,
    done: &std::sync::atomic::AtomicBool,
    load_started: Instant,
) -> (Vec<(f64, Duration)>, Vec<String>) {
    let (mut latencies, mut errors) = (Vec::new(), Vec::new());
    let mut i = 0usize;
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        let word = format!("restword{r}x{i}");
        let content: String = (0..400)
            .map(|l| {
                format!(
                    "{word} line {l}: GET /api/items/{l} 200 in {} ms\n",
                    (l * 7 + i) % 97
                )
            })
            .collect();
        let mut call = async |request: reqwest::RequestBuilder| {
            let started = Instant::now();
            let answer = request
                .header("authorization", "Bearer sk-load")
                .send()
                .await;
            let result = match answer {
                Ok(answer) if answer.status().is_success() => answer
                    .json::<Value>()
                    .await
                    .map_err(|e| format!("body: {e}")),
                Ok(answer) => Err(format!("{}", answer.status())),
                Err(e) => Err(format!("send: {e}")),
            };
            latencies.push((load_started.elapsed().as_secs_f64(), started.elapsed()));
            result
        };
        let put = call(
            client
                .post(format!("{base}/memories?type=TOOL_OUTPUT"))
                .header("content-type", "text/plain")
                .body(content),
        )
        .await;
        match put
            .as_ref()
            .ok()
            .and_then(|v| v["id"].as_str().map(str::to_owned))
        {
            Some(id) => {
                for request in [
                    client.get(format!("{base}/memories/{id}/lines?start=10&end=30")),
                    client.get(format!("{base}/search?q={word}")),
                    client.get(format!("{base}/memories/{id}/grep?pattern=line%2012")),
                ] {
                    if let Err(e) = call(request).await {
                        errors.push(e);
                    }
                }
            }
            None => errors.push(put.err().unwrap_or_else(|| "put without an id".into())),
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    (latencies, errors)
}

/// A new ~50 KB tool output: build log lines unique to the conversation and turn.
fn output(c: usize, turn: usize) -> String {
    (0..800)
        .map(|i| {
            format!("[{c:04}/{turn:02}] compiling crate_{i} v0.{turn}.{i} (/src/crate_{i}) ok\n")
        })
        .collect()
}

/// The stand-in provider: a provider's latency, and a scripted model that
/// calls `memory_fetch` once when a pointer is offered to it.
async fn stand_in(spent: Ledger) -> anyhow::Result<String> {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let spent = spent.clone();
            async move { answer(spent, headers, body).await }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(url)
}

async fn answer(spent: Ledger, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let arrived = Instant::now();
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let key = headers
        .get("x-bench-turn")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let fetched = messages.last().is_some_and(|m| {
        m["role"] == "tool"
            && m["tool_call_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("fetch_"))
    });
    let offered = request["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "memory_fetch"));
    // The first pointer in the conversation (not in Cairn's tool descriptions).
    let pointer = (!fetched && offered)
        .then(|| {
            let text = Value::Array(messages.clone()).to_string();
            text.match_indices("mem://").find_map(|(at, _)| {
                let id: String = text[at + 6..]
                    .chars()
                    .take_while(char::is_ascii_hexdigit)
                    .collect();
                (id.len() >= 12).then_some(id)
            })
        })
        .flatten();
    // A provider's latency: the head after 300 ms–2 s (spread by the body's length).
    let delay = Duration::from_millis(300 + (body.len() as u64 * 7919) % 1700);
    tokio::time::sleep(delay).await;
    let stream = request["stream"] == true;
    let usage = json!({"prompt_tokens": body.len() / 4, "completion_tokens": 12, "total_tokens": body.len() / 4 + 12});
    let record = move |spent: &Ledger, took: Duration| {
        if let Ok(mut s) = spent.lock() {
            s.first_delay.entry(key.clone()).or_insert(delay);
            *s.total.entry(key.clone()).or_default() += took;
        }
    };
    let call = pointer.map(|id| {
        json!([{"index": 0, "id": format!("fetch_{id}"), "type": "function",
            "function": {"name": "memory_fetch", "arguments": json!({"uri": format!("mem://{id}#L1-5")}).to_string()}}])
    });
    if !stream {
        // The rest of the answer's generation: another second.
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let message = match &call {
            Some(calls) => json!({"role": "assistant", "content": null, "tool_calls": calls}),
            None => json!({"role": "assistant", "content": "The build is fixed."}),
        };
        let answer = json!({"id": "chatcmpl-load", "object": "chat.completion", "created": 1, "model": "gpt-4.1",
            "choices": [{"index": 0, "message": message, "finish_reason": if call.is_some() {"tool_calls"} else {"stop"}}],
            "usage": usage});
        record(&spent, arrived.elapsed());
        return Response::builder()
            .header("content-type", "application/json")
            .body(Body::from(answer.to_string()))
            .unwrap_or_default();
    }
    // Streamed: ten chunks over a second, then the finish and usage chunks.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(16);
    tokio::spawn(async move {
        let chunk = |delta: Value, finish: Value| {
            format!(
                "data: {}\n\n",
                json!({"id": "chatcmpl-load", "object": "chat.completion.chunk", "created": 1,
                "model": "gpt-4.1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            )
        };
        let mut events = vec![chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )];
        match &call {
            Some(calls) => events.push(chunk(json!({"tool_calls": calls}), Value::Null)),
            None => events.extend(
                (0..10).map(|i| chunk(json!({"content": format!("word{i} ")}), Value::Null)),
            ),
        }
        events.push(chunk(
            json!({}),
            json!(if call.is_some() { "tool_calls" } else { "stop" }),
        ));
        events.push(format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-load", "object": "chat.completion.chunk",
            "created": 1, "model": "gpt-4.1", "choices": [], "usage": usage})
        ));
        events.push("data: [DONE]\n\n".to_owned());
        for event in events {
            if tx.send(Ok(event)).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        record(&spent, arrived.elapsed());
    });
    let stream = tokio_stream_of(rx);
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}

fn tokio_stream_of(
    mut rx: tokio::sync::mpsc::Receiver<Result<String, std::io::Error>>,
) -> impl futures::Stream<Item = Result<String, std::io::Error>> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// The search index under a data directory (`*-fulltext`): its files' bytes
/// and its segments (one `.term` file each); (0, 0) when it cannot be read.
fn index_on_disk(data_dir: &std::path::Path) -> (u64, usize) {
    let Ok(entries) = std::fs::read_dir(data_dir) else {
        return (0, 0);
    };
    let mut found = (0, 0);
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().ends_with("-fulltext") {
            continue;
        }
        for file in std::fs::read_dir(entry.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            found.0 += file.metadata().map_or(0, |m| m.len());
            if file.file_name().to_string_lossy().ends_with(".term") {
                found.1 += 1;
            }
        }
    }
    found
}

/// Latency by time window of a soak: for each window, the streamed turns'
/// first byte added (p50 / p99, and how many over 50 ms) and the REST
/// calls' p99, so a tail tells whether it grew with the run or came at once.
fn windows(run: &Run, window_secs: f64) -> Vec<String> {
    let end = run.elapsed.as_secs_f64();
    let mut out = Vec::new();
    let mut from = 0.0;
    while from < end {
        // A remainder shorter than a quarter window (the seconds after the
        // last whole one) goes into the window before it.
        let to = if end - (from + window_secs) < window_secs / 4.0 {
            end + 1.0
        } else {
            from + window_secs
        };
        let within = |at: &[f64], took: &[Duration]| -> Vec<Duration> {
            at.iter()
                .zip(took)
                .filter(|(at, _)| **at >= from && **at < to)
                .map(|(_, took)| *took)
                .collect()
        };
        let first = within(&run.first_byte_at, &run.first_byte_added);
        let rest = within(&run.rest_at, &run.rest);
        let slow = first
            .iter()
            .filter(|d| **d >= Duration::from_millis(50))
            .count();
        // The window's highest 1-s RSS, and of what.
        let peak = run
            .rss
            .iter()
            .zip(&run.rss_kinds)
            .filter(|((at, _), _)| *at >= from && *at < to)
            .max_by_key(|((_, kib), _)| *kib)
            .map_or(String::new(), |((_, kib), (anon, file))| {
                format!(
                    ", RSS peak {} MiB ({} / {})",
                    kib / 1024,
                    anon / 1024,
                    file / 1024
                )
            });
        out.push(format!(
            "{:.0}–{:.0} min: {:.1} / {:.1} ms ({slow} of {}), REST {:.1}{peak}",
            from / 60.0,
            to.min(end) / 60.0,
            percentile(&first, 0.5),
            percentile(&first, 0.99),
            first.len(),
            percentile(&rest, 0.99)
        ));
        from = to;
    }
    out
}

fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

fn percentile(samples: &[Duration], q: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    ms[((ms.len() - 1) as f64 * q).round() as usize]
}

/// How long a soak fills its caches before its slope counts as growth.
const WARM_UP_SECS: f64 = 300.0;

/// Least-squares slope of RSS over time, in MiB per minute.
fn slope(samples: &[(f64, u64)]) -> f64 {
    let n = samples.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (sx, sy) = samples
        .iter()
        .fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x, sy + *y as f64));
    let (mx, my) = (sx / n, sy / n);
    let (num, den) = samples.iter().fold((0.0, 0.0), |(num, den), (x, y)| {
        (num + (x - mx) * (*y as f64 - my), den + (x - mx) * (x - mx))
    });
    if den == 0.0 {
        0.0
    } else {
        num / den / 1024.0 * 60.0
    }
}

/// The REPORT section a run writes: a soak (`--minutes`) has its own.
fn marker(args: &Args) -> &'static str {
    if args.memory_limit_mib.is_some() {
        "proxy_soak_limited"
    } else if args.minutes > 0 {
        "proxy_soak"
    } else {
        "proxy_load"
    }
}

/// The memory samples to show: one per 5 minutes in a soak, else the first
/// and the last.
fn memory_marks(samples: &[MemorySample], every_five_minutes: bool) -> Vec<String> {
    let mib = |bytes: Option<u64>| bytes.map_or("?".to_owned(), |b| (b >> 20).to_string());
    let shown: Vec<&MemorySample> = if every_five_minutes {
        let mut next = 0.0;
        samples
            .iter()
            .filter(|s| {
                let due = s.at >= next;
                if due {
                    next += 300.0;
                }
                due
            })
            .collect()
    } else {
        samples.first().into_iter().chain(samples.last()).collect()
    };
    shown
        .iter()
        .map(|s| {
            let index = s.index.map_or(String::new(), |(bytes, segments)| {
                format!(" (index {} MiB, {segments} segments)", bytes >> 20)
            });
            format!(
                "{:.0} min: {} ({} / {}), {} MiB{index}",
                s.at / 60.0,
                s.anon_kib / 1024,
                mib(s.resident),
                mib(s.allocated),
                s.file_kib / 1024
            )
        })
        .collect()
}

/// What the kernel did in Cairn's memory cgroup, and how Cairn ended.
type Limited = (
    shared::cgroup::GroupReading,
    Option<std::process::ExitStatus>,
);

fn render(
    args: &Args,
    direct: &Run,
    through: &Run,
    idle_rss: u64,
    after_rss: u64,
    limited: Option<Limited>,
) -> String {
    let peak = through.rss.iter().map(|s| s.1).max().unwrap_or(0);
    let end = through.rss.last().map_or(0, |s| s.1);
    let mut out = String::new();
    let title = if let Some(mib) = args.memory_limit_mib {
        format!("LLM proxy soak in a {mib} MiB memory cgroup")
    } else if args.minutes > 0 {
        "LLM proxy soak".to_owned()
    } else {
        "LLM proxy under load".to_owned()
    };
    out.push_str(&format!("<!-- {} -->\n## {title}\n\n", marker(args)));
    out.push_str(&format!(
        "`cargo run --release -p cairn-bench --bin proxy_load -- --conversations {} --turns {}{}{}{}{}` — {} conversations at once (starting over 2 s, half streamed), each turn a new 50 KB tool result that Cairn offloads and a `memory_fetch` round it resolves{}{}; the stand-in answers after 300 ms–2 s and streams over ~1 s. Cairn: the release binary, SQLite, this 2-core machine.\n\n",
        args.conversations,
        args.turns,
        if args.minutes > 0 { format!(" --minutes {}", args.minutes) } else { String::new() },
        if args.skip_direct { " --skip-direct" } else { "" },
        if args.rest > 0 { format!(" --rest {}", args.rest) } else { String::new() },
        args.memory_limit_mib.map_or(String::new(), |mib| format!(" --memory-limit-mib {mib}")),
        args.conversations,
        if args.minutes > 0 {
            format!(", a new conversation every {} turns, for {} minutes", args.turns, args.minutes)
        } else {
            String::new()
        },
        if args.rest > 0 {
            format!(
                "; beside them {} REST clients each put a new ~20 KB memory, read a line slice of it, search one of its words and grep it, then rest 250 ms",
                args.rest
            )
        } else {
            String::new()
        }
    ));
    out.push_str("| measure | direct | through Cairn | target |\n| --- | --- | --- | --- |\n");
    // With --skip-direct the direct column has nothing to show.
    let direct_cell = |text: String| {
        if args.skip_direct {
            "—".to_owned()
        } else {
            text
        }
    };
    out.push_str(&format!(
        "| turns / errors | {} | {} / {} | no error the direct run did not have |\n",
        direct_cell(format!("{} / {}", direct.turns, direct.errors.len())),
        through.turns,
        through.errors.len()
    ));
    out.push_str(&format!(
        "| upstream rounds per JSON turn (mean) | {} | {:.2} | — |\n",
        direct_cell(format!("{:.2}", mean(&direct.rounds))),
        mean(&through.rounds)
    ));
    for (name, d, t, target) in [
        (
            "added at the first byte, streamed turns, p50 / p99",
            &direct.first_byte_added,
            &through.first_byte_added,
            "p99 < 50 ms",
        ),
        (
            "added over the whole turn, JSON turns, p50 / p99",
            &direct.whole_added,
            &through.whole_added,
            "—",
        ),
    ] {
        out.push_str(&format!(
            "| {name} | {} | {:.1} / {:.1} ms | {target} |\n",
            direct_cell(format!(
                "{:.1} / {:.1} ms",
                percentile(d, 0.5),
                percentile(d, 0.99)
            )),
            percentile(t, 0.5),
            percentile(t, 0.99)
        ));
    }
    out.push_str(&format!(
        "| Cairn's RSS: idle / peak / at the end / 15 s after, slope under load | — | {} / {} / {} / {} MiB, {:+.1} MiB/min | < 300 MB, flat |\n",
        idle_rss / 1024,
        peak / 1024,
        end / 1024,
        after_rss / 1024,
        slope(&through.rss)
    ));
    if args.minutes > 0 {
        // RSS at each 5-minute mark, to see the trend, not just its slope.
        let mut marks: Vec<String> = Vec::new();
        let mut next = 0.0;
        for (t, kib) in &through.rss {
            if *t >= next {
                marks.push(format!("{:.0} min: {} MiB", t / 60.0, kib / 1024));
                next += 300.0;
            }
        }
        out.push_str(&format!(
            "| Cairn's RSS every 5 minutes | — | {} | flat |\n",
            marks.join(" · ")
        ));
        out.push_str(&format!(
            "| by 15-minute window: first byte added p50 / p99 (turns at or over 50 ms of all), REST p99, RSS peak (anonymous / file-backed) | — | {} | p99 < 50 ms |\n",
            windows(through, 900.0).join(" · ")
        ));
        // A one-second peak says little without when it came and of what:
        // the index's mapped files (which the kernel takes back first) or heap.
        let over = through
            .rss
            .iter()
            .filter(|(_, kib)| kib * 1024 >= 300_000_000)
            .count();
        if let Some(p) = &through.peak {
            out.push_str(&format!(
                "| Cairn's RSS at its peak: when, anonymous / file-backed; seconds at or over 300 MB | — | {:.1} min, {} / {} MiB; {} s of {} | < 300 MB |\n",
                p.at / 60.0,
                p.anon_kib / 1024,
                p.file_kib / 1024,
                over,
                through.rss.len()
            ));
        }
        // The first minutes fill the caches from idle: a slope over the whole
        // run counts that filling as growth. From the 5th minute on, and by
        // kind (the index's mapped files grow with the index).
        let settled = |kib: fn(&MemorySample) -> u64| -> Vec<(f64, u64)> {
            through
                .memory
                .iter()
                .filter(|s| s.at >= WARM_UP_SECS)
                .map(|s| (s.at, kib(s)))
                .collect()
        };
        let rss: Vec<(f64, u64)> = through
            .rss
            .iter()
            .copied()
            .filter(|(at, _)| *at >= WARM_UP_SECS)
            .collect();
        out.push_str(&format!(
            "| slope from the 5th minute: RSS / anonymous / file-backed | — | {:+.2} / {:+.2} / {:+.2} MiB/min | flat |\n",
            slope(&rss),
            slope(&settled(|s| s.anon_kib)),
            slope(&settled(|s| s.file_kib)),
        ));
    }
    out.push_str(&format!(
        "| where it is: anonymous (jemalloc resident / allocated), file-backed (the search index on disk){} | — | {} | — |\n",
        if args.minutes > 0 {
            ", every 5 minutes"
        } else {
            ", first and last sample"
        },
        memory_marks(&through.memory, args.minutes > 0).join(" · ")
    ));
    if let Some((reading, exited)) = limited {
        out.push_str(&format!(
            "| Cairn's memory cgroup: limit / peak charge (heap and page cache) / times at the limit (a reclaim each) / OOM kills; Cairn at the end | — | {} / {} MiB / {} / {}; {} | no OOM kill |\n",
            reading.limit >> 20,
            reading.peak >> 20,
            reading.at_limit,
            reading.oom_kills,
            match exited {
                None => "running".to_owned(),
                Some(status) => format!("exited ({status})"),
            }
        ));
    }
    if args.rest > 0 {
        out.push_str(&format!(
            "| REST calls beside it (put, lines, search, grep) / errors | — | {} / {} | no error |\n",
            through.rest.len(),
            through.rest_errors.len()
        ));
        out.push_str(&format!(
            "| REST call latency, p50 / p99 | — | {:.1} / {:.1} ms | — |\n",
            percentile(&through.rest, 0.5),
            percentile(&through.rest, 0.99)
        ));
    }
    out.push_str(&format!(
        "| wall time | {} | {:.1} s | — |\n",
        direct_cell(format!("{:.1} s", direct.elapsed.as_secs_f64())),
        through.elapsed.as_secs_f64()
    ));
    if let Some(e) = through.errors.first() {
        out.push_str(&format!("\nFirst error through Cairn: `{e}`\n"));
    }
    if let Some(e) = through.rest_errors.first() {
        out.push_str(&format!("\nFirst REST error: `{e}`\n"));
    }
    out.push_str(&format!("<!-- /{} -->\n", marker(args)));
    out
}

fn mean(values: &[usize]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<usize>() as f64 / values.len() as f64
    }
}
