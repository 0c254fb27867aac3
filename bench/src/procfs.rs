//! Readings from `/proc`: a process's memory and CPU time.

use std::time::{Duration, Instant};

use anyhow::Context;

/// Memory figures of a process from `/proc/<pid>/status`, in KiB.
#[derive(Clone, Copy, Debug, Default)]
pub struct Memory {
    /// Resident set size now.
    pub rss_kib: u64,
    /// Peak resident set size ("high water mark") since start or the last reset.
    pub hwm_kib: u64,
    /// The anonymous part of RSS (heaps, stacks). Read by `proxy_load`
    /// only; the other binaries that include this module do not.
    #[allow(dead_code)]
    pub anon_kib: u64,
    /// The file-backed part of RSS (mapped files, such as the search index).
    #[allow(dead_code)]
    pub file_kib: u64,
}

/// Reads VmRSS, VmHWM, RssAnon and RssFile of `pid`.
pub fn memory(pid: u32) -> anyhow::Result<Memory> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    let field = |name: &str| -> anyhow::Result<u64> {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .with_context(|| format!("no {name} in {path}"))
    };
    Ok(Memory {
        rss_kib: field("VmRSS:")?,
        hwm_kib: field("VmHWM:")?,
        anon_kib: field("RssAnon:")?,
        file_kib: field("RssFile:")?,
    })
}

/// CPU time (user + system) `pid` has used so far; `self` for this process.
///
/// Assumes the usual 100 clock ticks per second.
pub fn cpu_time(pid: &str) -> anyhow::Result<Duration> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    // Fields after the command name (which may hold spaces) start at field 3;
    // utime and stime are fields 14 and 15.
    let after_name = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .with_context(|| format!("unexpected {path}"))?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |index: usize| -> anyhow::Result<u64> {
        fields
            .get(index)
            .and_then(|f| f.parse().ok())
            .with_context(|| format!("unexpected {path}"))
    };
    Ok(Duration::from_millis((ticks(11)? + ticks(12)?) * 10))
}

/// Resets the peak RSS (VmHWM) of `pid` to its current RSS (Linux ≥ 4.0).
pub fn reset_peak_rss(pid: u32) -> anyhow::Result<()> {
    let path = format!("/proc/{pid}/clear_refs");
    std::fs::write(&path, "5").with_context(|| format!("cannot write {path}"))
}

/// Measures the CPU time the server and this process use over a span of wall time.
pub struct CpuMeter {
    server_pid: String,
    server_start: Duration,
    client_start: Duration,
    started: Instant,
}

/// CPU used over a span, in seconds of CPU per second of wall time (cores busy).
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuUse {
    /// Average cores the server kept busy.
    pub server_cores: f64,
    /// Average cores the benchmark itself kept busy.
    pub client_cores: f64,
}

impl CpuMeter {
    /// Starts measuring.
    pub fn start(server_pid: u32) -> anyhow::Result<Self> {
        let server_pid = server_pid.to_string();
        Ok(Self {
            server_start: cpu_time(&server_pid)?,
            client_start: cpu_time("self")?,
            server_pid,
            started: Instant::now(),
        })
    }

    /// CPU used since the start.
    pub fn read(&self) -> anyhow::Result<CpuUse> {
        let wall = self.started.elapsed().as_secs_f64().max(1e-9);
        let server = cpu_time(&self.server_pid)?.saturating_sub(self.server_start);
        let client = cpu_time("self")?.saturating_sub(self.client_start);
        Ok(CpuUse {
            server_cores: server.as_secs_f64() / wall,
            client_cores: client.as_secs_f64() / wall,
        })
    }
}
