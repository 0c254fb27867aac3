//! jq over a memory: the program is compiled here (a syntax error is a 400
//! without a process), then run by a worker process under rlimits and a
//! deadline (see [`crate::jq`]), fed the content frame by frame.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;

use crate::domain::DomainError;
use crate::domain::memories::read::ObjectReader;

/// Bytes fed to the worker per write.
const FEED_BYTES: u64 = 1 << 20;

/// Bounds of one jq query.
#[derive(Clone, Debug)]
pub struct JqLimits {
    /// Largest content a query reads.
    pub max_input_bytes: u64,
    /// Most bytes of results (as JSON text) in one answer.
    pub max_output_bytes: usize,
    /// Most results in one answer.
    pub max_results: usize,
    /// Wall-clock time before the worker is killed.
    pub timeout: Duration,
    /// Address space of the worker.
    pub memory_bytes: u64,
    /// The worker binary (`cairn`, run as `cairn jq-worker`).
    pub worker: PathBuf,
    /// Workers that may run at once (others wait their turn).
    pub workers: Arc<Semaphore>,
}

/// What a query answers.
#[derive(Debug, Deserialize)]
pub struct JqResult {
    /// Each output value, as the JSON text jaq printed (keys in input order).
    pub results: Vec<Box<RawValue>>,
    /// The output caps stopped the program early.
    pub truncated: bool,
    /// JSON values read from the content.
    pub inputs: u64,
}

/// A worker's answer when it failed (`RawValue` cannot sit in an untagged
/// enum, so the two answers are told apart by trying this one first).
#[derive(Deserialize)]
struct Failed {
    error: WorkerError,
}

#[derive(Deserialize)]
struct WorkerError {
    code: String,
    message: String,
}

/// Runs `program` over the content `reader` reads.
pub async fn query(
    mut reader: ObjectReader,
    program: &str,
    limits: &JqLimits,
) -> Result<JqResult, DomainError> {
    crate::jq::compile(program).map_err(|message| DomainError::field("jq", message))?;
    let size = reader.size();
    if size > limits.max_input_bytes {
        return Err(DomainError::Unprocessable {
            code: "query_too_large",
            message: format!(
                "the memory has {size} bytes; jq reads at most {} (CAIRN_QUERY_MAX_BYTES): use grep or slices on it",
                limits.max_input_bytes
            ),
        });
    }
    let _turn = limits
        .workers
        .acquire()
        .await
        .map_err(|e| DomainError::internal(format!("jq workers: {e}")))?;
    let mut child = tokio::process::Command::new(&limits.worker)
        .arg("jq-worker")
        .arg("--max-output-bytes")
        .arg(limits.max_output_bytes.to_string())
        .arg("--max-results")
        .arg(limits.max_results.to_string())
        .arg("--cpu-seconds")
        .arg(limits.timeout.as_secs().max(1).to_string())
        .arg("--memory-bytes")
        .arg(limits.memory_bytes.to_string())
        .arg("--")
        .arg(program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| DomainError::internal(format!("cannot start the jq worker: {e}")))?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(DomainError::internal("the jq worker has no pipes"));
    };
    let feed = async move {
        let mut offset = 0;
        while offset < size {
            let piece = reader.read(offset, FEED_BYTES.min(size - offset)).await?;
            if piece.is_empty() {
                return Err(DomainError::internal("the content ended early"));
            }
            offset += piece.len() as u64;
            // A worker that stopped reading (it failed, or hit its limits) answers below.
            if stdin.write_all(&piece).await.is_err() {
                break;
            }
        }
        drop(stdin);
        Ok::<_, DomainError>(())
    };
    let cap = (limits.max_output_bytes + 64 * 1024) as u64;
    let collect = async move {
        let mut out = Vec::new();
        stdout.take(cap).read_to_end(&mut out).await.map(|_| out)
    };
    let run = async { tokio::join!(feed, collect, child.wait()) };
    let (fed, out, status) = match tokio::time::timeout(limits.timeout, run).await {
        Ok(done) => done,
        Err(_) => return Err(over_limits(limits)),
    };
    fed?;
    let out = out.map_err(|e| DomainError::internal(format!("jq worker output: {e}")))?;
    let status = status.map_err(|e| DomainError::internal(format!("jq worker: {e}")))?;
    if !status.success() {
        // Killed by its CPU or memory limit (or aborted on an allocation failure).
        return Err(over_limits(limits));
    }
    if let Ok(failed) = serde_json::from_slice::<Failed>(&out) {
        return Err(worker_error(failed.error));
    }
    serde_json::from_slice::<JqResult>(&out)
        .map_err(|e| DomainError::internal(format!("jq worker answer: {e}")))
}

fn over_limits(limits: &JqLimits) -> DomainError {
    DomainError::Unprocessable {
        code: "query_limit",
        message: format!(
            "the jq program ran out of its limits ({} ms, {} MiB): make it do less, or query a smaller memory",
            limits.timeout.as_millis(),
            limits.memory_bytes >> 20
        ),
    }
}

fn worker_error(error: WorkerError) -> DomainError {
    match error.code.as_str() {
        "not_json" => DomainError::Unprocessable {
            code: "not_json",
            message: error.message,
        },
        "jq_error" => DomainError::Unprocessable {
            code: "jq_error",
            message: error.message,
        },
        "invalid_program" => DomainError::field("jq", error.message),
        _ => DomainError::internal(format!("jq worker: {}: {}", error.code, error.message)),
    }
}
