//! Prometheus metrics of one application: what was stored, saved, served and decided.
//!
//! Every label is low-cardinality by construction: memory types and subtypes are
//! client-given, so types are folded onto the known set (anything else is
//! `OTHER`), models onto the pricing table's entries, routes onto their
//! templates. Ids and namespaces never appear.

mod memory;
mod proxy;

pub use proxy::ProxyMetrics;

use prometheus::{
    CounterVec, Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

/// Memory types that keep their own label value; any other type is `OTHER`.
const KNOWN_TYPES: &[&str] = &[
    "TOOL_OUTPUT",
    "WEB_SCRAPE",
    "FILE_LIST",
    "TRANSCRIPT",
    "SUMMARY",
    "CONTEXT",
    "DOCUMENT",
];

/// Buckets of the context-size histogram, in tokens: 1k to 1M.
const TOKEN_BUCKETS: &[f64] = &[
    1_000.0,
    2_000.0,
    5_000.0,
    10_000.0,
    20_000.0,
    40_000.0,
    80_000.0,
    128_000.0,
    200_000.0,
    400_000.0,
    1_000_000.0,
];

/// Buckets of the request-duration histogram, in seconds: 0.5 ms to 10 s.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// The metrics of one application, registered in its own registry.
pub struct Metrics {
    registry: Registry,
    /// Memories put, by type and whether the put was a dedup hit.
    pub memories_put: IntCounterVec,
    /// Content bytes received by puts (dedup hits included).
    pub bytes_in: IntCounter,
    /// Content bytes of puts that created a new object.
    pub bytes_new: IntCounter,
    /// Bytes written to the store for new objects (compressed).
    pub bytes_stored: IntCounter,
    /// Tokens kept out of context, by source (put, compress) and memory type.
    pub tokens_saved: IntCounterVec,
    /// Input cost those tokens would have had, by pricing-table model.
    pub cost_saved: CounterVec,
    /// Slices answered, by kind (lines, bytes, chunk, content).
    pub slices: IntCounterVec,
    /// Reads of offloaded content (slices or whole), by memory type.
    pub refetches: IntCounterVec,
    /// Compress calls, by strategy.
    pub compress_calls: IntCounterVec,
    /// Pieces stored by compress, by strategy.
    pub compress_offloaded: IntCounterVec,
    /// Governor decisions, by tier.
    pub governor_decisions: IntCounterVec,
    /// Greps' asks of the full-text index for the frames they may pass
    /// over, by result (used, not_indexed, failed).
    pub grep_index_lookups: IntCounterVec,
    /// Cache lookups, by layer and result (hit, miss).
    pub cache_lookups: IntCounterVec,
    /// Shared-cache failures, by layer and reason (timeout, error, open circuit).
    pub cache_errors: IntCounterVec,
    /// 1 while a shared cache layer is degraded (requests go to the stores).
    pub cache_degraded: IntGaugeVec,
    /// HTTP requests, by route template, method and status.
    pub http_requests: IntCounterVec,
    /// HTTP request durations in seconds, by route template and method.
    pub http_duration: HistogramVec,
    /// Objects in the store (set at each scrape).
    pub store_objects: IntGauge,
    /// Bytes the store's objects take (set at each scrape).
    pub store_bytes: IntGauge,
    /// Content bytes of the store's objects (set at each scrape).
    pub store_content_bytes: IntGauge,
    /// Context sizes seen by the governor and compress, in tokens, by source.
    pub context_tokens: HistogramVec,
    /// The LLM proxy's metrics.
    pub proxy: ProxyMetrics,
    /// Requests refused by a per-namespace limit, by surface (`api`, `proxy`) and limit (`rate`, `concurrency`).
    pub limit_rejections: IntCounterVec,
    /// Token-count cache totals already reported (the cache is process-wide).
    token_cache_seen: std::sync::Mutex<(u64, u64)>,
}

impl Metrics {
    /// A fresh set of metrics in a registry of its own.
    ///
    /// # Panics
    /// Never in practice: the names and labels below are valid and distinct.
    #[allow(clippy::expect_used)]
    pub fn new() -> Self {
        Self::build().expect("metric definitions are valid")
    }

    fn build() -> prometheus::Result<Self> {
        let registry = Registry::new();
        let counter = |name: &str, help: &str| -> prometheus::Result<IntCounter> {
            let c = IntCounter::with_opts(Opts::new(name, help))?;
            registry.register(Box::new(c.clone()))?;
            Ok(c)
        };
        let counters =
            |name: &str, help: &str, labels: &[&str]| -> prometheus::Result<IntCounterVec> {
                let c = IntCounterVec::new(Opts::new(name, help), labels)?;
                registry.register(Box::new(c.clone()))?;
                Ok(c)
            };
        let gauge = |name: &str, help: &str| -> prometheus::Result<IntGauge> {
            let g = IntGauge::with_opts(Opts::new(name, help))?;
            registry.register(Box::new(g.clone()))?;
            Ok(g)
        };
        let histogram = |name: &str, help: &str, buckets: &[f64], labels: &[&str]| {
            let h = HistogramVec::new(
                HistogramOpts::new(name, help).buckets(buckets.to_vec()),
                labels,
            )?;
            registry.register(Box::new(h.clone()))?;
            Ok::<_, prometheus::Error>(h)
        };
        let cost_saved = CounterVec::new(
            Opts::new(
                "cairn_cost_saved_usd_total",
                "Input cost of the tokens saved, in USD, by pricing-table model",
            ),
            &["model"],
        )?;
        registry.register(Box::new(cost_saved.clone()))?;
        // Resident memory, CPU seconds, open files of the server process.
        #[cfg(target_os = "linux")]
        registry.register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        ))?;
        // The allocator's and the kernel's view of that memory.
        registry.register(Box::new(memory::MemoryCollector::new()?))?;
        Ok(Self {
            memories_put: counters(
                "cairn_memories_put_total",
                "Memories put, by type and whether the content was already stored in the namespace",
                &["type", "deduplicated"],
            )?,
            bytes_in: counter(
                "cairn_bytes_in_total",
                "Content bytes received by puts, dedup hits included",
            )?,
            bytes_new: counter(
                "cairn_bytes_new_total",
                "Content bytes of puts that created a new object",
            )?,
            bytes_stored: counter(
                "cairn_bytes_stored_total",
                "Bytes written to the store for new objects, after compression",
            )?,
            tokens_saved: counters(
                "cairn_tokens_saved_total",
                "Tokens kept out of agents' context, by source and memory type",
                &["source", "type"],
            )?,
            cost_saved,
            slices: counters(
                "cairn_slices_served_total",
                "Slices of memories answered, by kind",
                &["kind"],
            )?,
            refetches: counters(
                "cairn_refetches_total",
                "Reads of offloaded content (any slice or the whole), by memory type",
                &["type"],
            )?,
            compress_calls: counters(
                "cairn_compress_calls_total",
                "Compress calls, by strategy",
                &["strategy"],
            )?,
            compress_offloaded: counters(
                "cairn_compress_offloaded_total",
                "Pieces of message lists stored by compress, by strategy",
                &["strategy"],
            )?,
            governor_decisions: counters(
                "cairn_governor_decisions_total",
                "Governor decisions, by tier",
                &["tier"],
            )?,
            grep_index_lookups: counters(
                "cairn_grep_index_lookups_total",
                "Greps' asks of the full-text index for frames that cannot match, by result: used, not_indexed (every frame read), failed (every frame read)",
                &["result"],
            )?,
            limit_rejections: counters(
                "cairn_limit_rejections_total",
                "Requests refused by a per-namespace limit (429), by surface (api, proxy) and limit (rate, concurrency)",
                &["surface", "limit"],
            )?,
            cache_lookups: counters(
                "cairn_cache_lookups_total",
                "Cache lookups, by layer and result",
                &["layer", "result"],
            )?,
            cache_errors: counters(
                "cairn_cache_errors_total",
                "Shared-cache failures answered from the stores instead, by layer and reason",
                &["layer", "reason"],
            )?,
            cache_degraded: {
                let g = IntGaugeVec::new(
                    Opts::new(
                        "cairn_cache_degraded",
                        "1 while a shared cache layer is bypassed (down, slow or its circuit open)",
                    ),
                    &["layer"],
                )?;
                registry.register(Box::new(g.clone()))?;
                g
            },
            http_requests: counters(
                "cairn_http_requests_total",
                "HTTP requests, by route template, method and status",
                &["route", "method", "status"],
            )?,
            http_duration: histogram(
                "cairn_http_request_duration_seconds",
                "HTTP request durations until the response head, by route template and method",
                LATENCY_BUCKETS,
                &["route", "method"],
            )?,
            store_objects: gauge("cairn_store_objects", "Objects in the store")?,
            store_bytes: gauge(
                "cairn_store_bytes",
                "Bytes the store's objects take, after compression",
            )?,
            store_content_bytes: gauge(
                "cairn_store_content_bytes",
                "Content bytes of the store's objects, before compression",
            )?,
            context_tokens: histogram(
                "cairn_context_tokens",
                "Context sizes seen by the governor and compress, in tokens",
                TOKEN_BUCKETS,
                &["source"],
            )?,
            proxy: ProxyMetrics::register(&registry)?,
            token_cache_seen: std::sync::Mutex::new((0, 0)),
            registry,
        })
    }

    /// Counts one put of a memory of `kind`.
    pub fn record_put(&self, kind: &str, deduplicated: bool, bytes: u64, new_object: Option<u64>) {
        self.memories_put
            .with_label_values(&[
                type_label(kind),
                if deduplicated { "true" } else { "false" },
            ])
            .inc();
        self.bytes_in.inc_by(bytes);
        if let Some(stored) = new_object {
            self.bytes_new.inc_by(bytes);
            self.bytes_stored.inc_by(stored);
        }
    }

    /// Counts one cache lookup of `layer`.
    pub fn cache(&self, layer: &str, hit: bool) {
        self.cache_lookups
            .with_label_values(&[layer, if hit { "hit" } else { "miss" }])
            .inc();
    }

    /// Counts one failed lookup or store of a shared cache `layer`.
    pub fn cache_error(&self, layer: &str, reason: &str) {
        self.cache_errors.with_label_values(&[layer, reason]).inc();
    }

    /// Counts one slice of `kind` read from a memory of `memory_type`.
    pub fn slice(&self, kind: &str, memory_type: &str) {
        self.slices.with_label_values(&[kind]).inc();
        self.refetches
            .with_label_values(&[type_label(memory_type)])
            .inc();
    }

    /// Counts one grep's ask of the full-text index, answered `result`.
    pub fn grep_index_lookup(&self, result: &str) {
        self.grep_index_lookups.with_label_values(&[result]).inc();
    }

    /// The registry's text exposition.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::error!(error = %e, "could not encode metrics");
        }
        String::from_utf8(out).unwrap_or_default()
    }

    /// Adds what the process-wide token-count cache did since the last scrape
    /// (its running totals of hits and misses, read by the caller).
    pub fn catch_up_token_cache(&self, (hits, misses): (u64, u64)) {
        let mut seen = self
            .token_cache_seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (seen_hits, seen_misses) = &mut *seen;
        for (result, now, before) in [("hit", hits, seen_hits), ("miss", misses, seen_misses)] {
            self.cache_lookups
                .with_label_values(&["token_counts", result])
                .inc_by(now.saturating_sub(*before));
            *before = now;
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// The label value of a memory type: itself when known, else `OTHER`.
pub fn type_label(kind: &str) -> &str {
    KNOWN_TYPES
        .iter()
        .find(|t| t.eq_ignore_ascii_case(kind))
        .copied()
        .unwrap_or("OTHER")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_types_fold_onto_other() {
        assert_eq!(type_label("TOOL_OUTPUT"), "TOOL_OUTPUT");
        assert_eq!(type_label("tool_output"), "TOOL_OUTPUT");
        assert_eq!(type_label("a-client-invented-type-1234"), "OTHER");
    }

    #[test]
    fn exposition_names_every_family_once_used() {
        let m = Metrics::new();
        m.record_put("TOOL_OUTPUT", false, 10, Some(4));
        m.slice("lines", "TOOL_OUTPUT");
        let text = m.render();
        assert!(
            text.contains(
                "cairn_memories_put_total{deduplicated=\"false\",type=\"TOOL_OUTPUT\"} 1"
            )
        );
        assert!(text.contains("cairn_bytes_stored_total 4"));
        assert!(text.contains("cairn_refetches_total{type=\"TOOL_OUTPUT\"} 1"));
    }
}
