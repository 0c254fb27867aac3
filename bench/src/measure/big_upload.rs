//! Peak server memory while a large body, generated on the fly, streams in.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::api::{Api, Stored};
use crate::generate;
use crate::procfs::{self, CpuMeter, CpuUse, Memory};

/// How often the server's VmRSS is read.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// Size of the body chunks the generator hands to the client.
const CHUNK_BYTES: usize = 256 << 10;

/// What the big upload found.
#[derive(Debug)]
pub struct BigUpload {
    /// Bytes sent.
    pub bytes: u64,
    /// Lines sent.
    pub lines: u64,
    /// From the request's start to the 201 answer.
    pub elapsed: Duration,
    /// CPU used during the upload.
    pub cpu: CpuUse,
    /// The server's answer.
    pub stored: Stored,
    /// Server memory just before the upload.
    pub before: Memory,
    /// Largest VmRSS sampled during the upload, KiB.
    pub peak_rss_kib: u64,
    /// Samples taken.
    pub samples: u64,
    /// VmHWM right after the answer, KiB.
    pub hwm_kib: u64,
    /// Whether VmHWM was reset before the upload (else it covers the server's whole life).
    pub hwm_reset: Result<(), String>,
}

/// Streams `bytes` of generated text to the server as one raw put while
/// sampling the server's memory.
pub async fn run(api: &Api, pid: u32, bytes: u64, seed: u64) -> anyhow::Result<BigUpload> {
    let hwm_reset = procfs::reset_peak_rss(pid).map_err(|e| format!("{e:#}"));
    let before = procfs::memory(pid)?;
    let sampler = Sampler::start(pid);

    eprintln!("big upload: streaming {} MiB…", bytes >> 20);
    let (stream, tally) = generate::text_stream(seed, bytes, CHUNK_BYTES);
    let cpu = CpuMeter::start(pid)?;
    let started = Instant::now();
    let stored = api
        .put_raw(reqwest::Body::wrap_stream(stream), "text/plain")
        .await;
    let elapsed = started.elapsed();
    let cpu = cpu.read()?;
    let sampled = sampler.stop();
    let stored = stored?;
    let (peak_rss_kib, samples) = sampled?;
    let after = procfs::memory(pid)?;
    Ok(BigUpload {
        bytes: tally.bytes(),
        lines: tally.lines(),
        elapsed,
        cpu,
        stored,
        before,
        peak_rss_kib: peak_rss_kib.max(after.rss_kib),
        samples,
        hwm_kib: after.hwm_kib,
        hwm_reset,
    })
}

/// A thread reading a process's VmRSS every [`SAMPLE_EVERY`], keeping the largest.
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<anyhow::Result<(u64, u64)>>,
}

impl Sampler {
    fn start(pid: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let (mut peak, mut samples) = (0, 0);
            while !flag.load(Ordering::Relaxed) {
                peak = peak.max(procfs::memory(pid)?.rss_kib);
                samples += 1;
                std::thread::sleep(SAMPLE_EVERY);
            }
            Ok((peak, samples))
        });
        Self { stop, thread }
    }

    /// Stops sampling; returns the peak VmRSS (KiB) and the number of samples.
    fn stop(self) -> anyhow::Result<(u64, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|_| anyhow::anyhow!("the memory sampler panicked"))?
            .context("memory sampling failed")
    }
}
