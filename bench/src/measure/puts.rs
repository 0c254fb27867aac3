//! Durable small puts: concurrent clients, each storing distinct contents
//! for a fixed time.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::ValueEnum;
use reqwest::StatusCode;
use reqwest::header::CONTENT_TYPE;

use crate::api::{Api, snippet};
use crate::generate::TextGenerator;
use crate::procfs::{CpuMeter, CpuUse};

/// Error messages kept for the report.
const KEPT_ERRORS: usize = 5;

/// How a put carries its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PutBody {
    /// `{"content": "..."}` as `application/json`.
    Json,
    /// The content itself as `text/plain`, fields as query parameters.
    Raw,
}

impl std::fmt::Display for PutBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Json => "JSON",
            Self::Raw => "raw text/plain",
        })
    }
}

/// The put load to run.
#[derive(Clone, Copy, Debug)]
pub struct PutLoad {
    /// Concurrent clients.
    pub clients: usize,
    /// How long clients start new puts.
    pub duration: Duration,
    /// Content bytes per put.
    pub content_bytes: usize,
    /// JSON or raw bodies.
    pub body: PutBody,
    /// Seed of the content generators.
    pub seed: u64,
}

/// What the put measure found.
#[derive(Debug, Default)]
pub struct Puts {
    /// 201 answers.
    pub created: u64,
    /// From the first put's start to the last put's answer.
    pub elapsed: Duration,
    /// CPU used meanwhile.
    pub cpu: CpuUse,
    /// Latency of each 201 put.
    pub latencies: Vec<Duration>,
    /// Non-201 answers and failed requests.
    pub errors: u64,
    /// The first few of those.
    pub error_samples: Vec<String>,
}

impl Puts {
    fn merge(&mut self, other: Self) {
        self.created += other.created;
        self.latencies.extend(other.latencies);
        self.errors += other.errors;
        let room = KEPT_ERRORS.saturating_sub(self.error_samples.len());
        self.error_samples
            .extend(other.error_samples.into_iter().take(room));
    }
}

/// Runs `load.clients` tasks putting distinct contents until `load.duration` has passed.
pub async fn run(api: &Api, pid: u32, load: PutLoad, run_id: &str) -> anyhow::Result<Puts> {
    eprintln!("puts: {} clients for {:?}…", load.clients, load.duration);
    let cpu = CpuMeter::start(pid)?;
    let started = Instant::now();
    let deadline = started + load.duration;
    let tasks: Vec<_> = (0..load.clients)
        .map(|client| {
            let api = api.clone();
            let run_id = run_id.to_owned();
            tokio::spawn(async move { put_until(&api, load, client, &run_id, deadline).await })
        })
        .collect();
    let mut total = Puts::default();
    for task in tasks {
        total.merge(task.await.context("a put client panicked")?);
    }
    total.elapsed = started.elapsed();
    total.cpu = cpu.read()?;
    Ok(total)
}

/// One client's loop: build a distinct content, put it, time it, until `deadline`.
async fn put_until(
    api: &Api,
    load: PutLoad,
    client: usize,
    run_id: &str,
    deadline: Instant,
) -> Puts {
    let mut generator = TextGenerator::new(load.seed ^ ((client as u64 + 1) << 32));
    let mut result = Puts::default();
    let url = api.url("/v1/memories?type=TOOL_OUTPUT&subtype=bench");
    let mut sequence = 0u64;
    while Instant::now() < deadline {
        sequence += 1;
        let content =
            distinct_content(&mut generator, load.content_bytes, run_id, client, sequence);
        let request = match load.body {
            PutBody::Json => api
                .client
                .post(&url)
                .header(CONTENT_TYPE, "application/json")
                .body(serde_json::json!({ "content": content }).to_string()),
            PutBody::Raw => api
                .client
                .post(&url)
                .header(CONTENT_TYPE, "text/plain")
                .body(content),
        };
        let started = Instant::now();
        let answer = match request.send().await {
            Ok(response) => {
                let status = response.status();
                response.bytes().await.map(|body| (status, body))
            }
            Err(e) => Err(e),
        };
        let elapsed = started.elapsed();
        let problem = match answer {
            Ok((StatusCode::CREATED, _)) => None,
            Ok((status, body)) => Some(format!("answered {status}: {}", snippet(&body))),
            Err(e) => Some(format!("request failed: {e}")),
        };
        match problem {
            None => {
                result.created += 1;
                result.latencies.push(elapsed);
            }
            Some(problem) => {
                result.errors += 1;
                if result.error_samples.len() < KEPT_ERRORS {
                    result.error_samples.push(problem);
                }
            }
        }
    }
    result
}

/// Exactly `bytes` of text (ASCII) whose first line makes it unique in this run.
fn distinct_content(
    generator: &mut TextGenerator,
    bytes: usize,
    run_id: &str,
    client: usize,
    sequence: u64,
) -> String {
    let mut content =
        format!("cairn-bench put run={run_id} client={client} seq={sequence}\n").into_bytes();
    generator.fill(&mut content, bytes);
    content.truncate(bytes);
    if let Some(last) = content.last_mut() {
        *last = b'\n';
    }
    // The generator writes ASCII only, and truncation keeps it so.
    String::from_utf8_lossy(&content).into_owned()
}
