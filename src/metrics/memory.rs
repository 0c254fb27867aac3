//! Where the process's memory is, read at each scrape: what the allocator
//! holds for Rust code (jemalloc's own statistics, when it is the allocator)
//! and how the kernel sees the resident set (anonymous against file-backed).
//!
//! The two together attribute a growing RSS: file-backed pages are the
//! search index's mapped files (the kernel's page cache, taken back under
//! pressure); anonymous memory beyond jemalloc's `resident` is held by C
//! code (SQLite's page cache, zstd) through the C library's malloc, or by
//! thread stacks; `allocated` growing means live Rust data grows, `resident`
//! growing alone means memory freed but not yet handed back.

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGaugeVec, Opts};

/// Collects `cairn_allocator_bytes` and `cairn_process_memory_bytes`.
pub struct MemoryCollector {
    allocator: IntGaugeVec,
    process: IntGaugeVec,
}

impl MemoryCollector {
    /// The collector, ready to register.
    pub fn new() -> prometheus::Result<Self> {
        Ok(Self {
            allocator: IntGaugeVec::new(
                Opts::new(
                    "cairn_allocator_bytes",
                    "Bytes jemalloc holds for Rust code, by state: allocated (live), active (in pages of live allocations), resident (in RAM, including freed memory not yet handed back), retained (address space kept without RAM), metadata",
                ),
                &["state"],
            )?,
            process: IntGaugeVec::new(
                Opts::new(
                    "cairn_process_memory_bytes",
                    "The process's resident memory by kind: anonymous (heaps and stacks) and file (mapped files such as the search index)",
                ),
                &["kind"],
            )?,
        })
    }

    fn read(&self) {
        for (state, bytes) in allocator_stats() {
            self.allocator
                .with_label_values(&[state])
                .set(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
        if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
            for (kind, field) in [("anonymous", "RssAnon:"), ("file", "RssFile:")] {
                if let Some(kib) = status_kib(&status, field) {
                    self.process
                        .with_label_values(&[kind])
                        .set(i64::try_from(kib.saturating_mul(1024)).unwrap_or(i64::MAX));
                }
            }
        }
    }
}

impl Collector for MemoryCollector {
    fn desc(&self) -> Vec<&Desc> {
        let mut descs = self.allocator.desc();
        descs.extend(self.process.desc());
        descs
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.read();
        let mut families = self.allocator.collect();
        families.extend(self.process.collect());
        families
    }
}

/// jemalloc's totals after refreshing its statistics; empty when they
/// cannot be read.
#[cfg(not(target_env = "msvc"))]
fn allocator_stats() -> Vec<(&'static str, usize)> {
    use tikv_jemalloc_ctl::{epoch, stats};
    if epoch::advance().is_err() {
        return Vec::new();
    }
    [
        ("allocated", stats::allocated::read()),
        ("active", stats::active::read()),
        ("resident", stats::resident::read()),
        ("retained", stats::retained::read()),
        ("metadata", stats::metadata::read()),
    ]
    .into_iter()
    .filter_map(|(state, read)| read.ok().map(|bytes| (state, bytes)))
    .collect()
}

/// Without jemalloc there is nothing of the allocator's to read.
#[cfg(target_env = "msvc")]
fn allocator_stats() -> Vec<(&'static str, usize)> {
    Vec::new()
}

/// The value in KiB of a `/proc/<pid>/status` line such as `RssAnon:  1234 kB`.
fn status_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use prometheus::Encoder;

    use super::*;

    #[test]
    fn status_lines_are_read_in_kib() {
        let status = "Name:\tcairn\nRssAnon:\t  183296 kB\nRssFile:\t   60100 kB\n";
        assert_eq!(status_kib(status, "RssAnon:"), Some(183_296));
        assert_eq!(status_kib(status, "RssFile:"), Some(60_100));
        assert_eq!(status_kib(status, "RssShmem:"), None);
    }

    #[test]
    fn a_scrape_reads_the_allocator_and_the_process() {
        let registry = prometheus::Registry::new();
        registry
            .register(Box::new(MemoryCollector::new().unwrap()))
            .unwrap();
        let mut text = Vec::new();
        prometheus::TextEncoder::new()
            .encode(&registry.gather(), &mut text)
            .unwrap();
        let text = String::from_utf8(text).unwrap();
        let value = |series: &str| -> f64 {
            text.lines()
                .find_map(|line| line.strip_prefix(series))
                .and_then(|rest| rest.trim().parse().ok())
                .unwrap_or_else(|| panic!("no {series} in {text}"))
        };
        assert!(value("cairn_process_memory_bytes{kind=\"anonymous\"}") > 0.0);
        // jemalloc's own metadata is resident once it has started, even in
        // a test binary whose global allocator is the system's.
        #[cfg(not(target_env = "msvc"))]
        assert!(value("cairn_allocator_bytes{state=\"resident\"}") > 0.0);
    }
}
