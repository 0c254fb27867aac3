//! Ingest throughput: `zstd -3 -T1` over a generated file versus a raw
//! streamed upload of the same file to Cairn.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};
use tokio_util::io::ReaderStream;

use crate::api::{Api, Stored};
use crate::generate;
use crate::procfs::{CpuMeter, CpuUse};

/// What the ingest measure found.
#[derive(Debug)]
pub struct Ingest {
    /// Size of the generated file.
    pub file_bytes: u64,
    /// Lines of the generated file.
    pub file_lines: u64,
    /// Wall time of `zstd -3 -T1 -q -c FILE > /dev/null`.
    pub zstd: Duration,
    /// From the request's start to the 201 answer.
    pub upload: Duration,
    /// CPU used during the upload.
    pub cpu: CpuUse,
    /// The server's answer.
    pub stored: Stored,
    /// SHA-256 of the file, hex (the id the server should give).
    pub sha256: String,
}

/// Generates `bytes` of text into `dir`, times zstd over it, then uploads it.
pub async fn run(
    api: &Api,
    pid: u32,
    zstd: &Path,
    dir: &Path,
    bytes: u64,
    seed: u64,
) -> anyhow::Result<Ingest> {
    let path = dir.join("ingest.txt");
    eprintln!("ingest: generating {} MiB of text…", bytes >> 20);
    let (file_bytes, file_lines) = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || generate::write_file(&path, seed, bytes))
            .await
            .context("the generator panicked")??
    };

    eprintln!("ingest: timing zstd -3 -T1…");
    let zstd = time_zstd(zstd, &path).await?;

    eprintln!("ingest: uploading the file…");
    let file = tokio::fs::File::open(&path)
        .await
        .with_context(|| format!("cannot open {}", path.display()))?;
    let body = reqwest::Body::wrap_stream(ReaderStream::with_capacity(file, 256 << 10));
    let cpu = CpuMeter::start(pid)?;
    let started = Instant::now();
    let stored = api.put_raw(body, "text/plain").await?;
    let upload = started.elapsed();
    let cpu = cpu.read()?;

    let sha256 = tokio::task::spawn_blocking(move || sha256_file(&path))
        .await
        .context("hashing panicked")??;
    Ok(Ingest {
        file_bytes,
        file_lines,
        zstd,
        upload,
        cpu,
        stored,
        sha256,
    })
}

/// Wall time of `zstd -3 -T1 -q -c FILE > /dev/null`.
async fn time_zstd(zstd: &Path, file: &Path) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let status = tokio::process::Command::new(zstd)
        .args(["-3", "-T1", "-q", "-c"])
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .await
        .with_context(|| format!("cannot run {}", zstd.display()))?;
    let elapsed = started.elapsed();
    if !status.success() {
        bail!("{} failed: {status}", zstd.display());
    }
    Ok(elapsed)
}

fn sha256_file(path: &Path) -> anyhow::Result<String> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(format!("{:x}", hasher.finalize()))
}
