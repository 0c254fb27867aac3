//! Metrics of the LLM proxy: requests, the latency Cairn adds, retrieval
//! rounds, prompt-cache tokens, tokens saved, offloaded and fetched back,
//! and what requests cost against what they would have cost untouched.

use prometheus::{
    CounterVec, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
};

/// Buckets of the added-latency histogram, in seconds: 0.1 ms to 2.5 s.
const ADDED_LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 1.0, 2.5,
];

/// The proxy's metrics (labels: provider, endpoint, status, kind — never a model or a key).
pub struct ProxyMetrics {
    /// Proxied requests, by provider, endpoint and answered status.
    pub requests: IntCounterVec,
    /// Time Cairn spent on a request besides waiting for the upstream, by provider.
    pub added_latency: HistogramVec,
    /// Retrieval rounds Cairn resolved itself (one per re-asked upstream call), by provider.
    pub rounds: IntCounterVec,
    /// Prompt-cache tokens the upstream reported, by provider and kind (`read`, `write`).
    pub cache_tokens: IntCounterVec,
    /// Input tokens the proxy's rewrites kept out of upstream requests, by provider.
    pub tokens_saved: IntCounterVec,
    /// Requests sent upstream unchanged, by provider and reason.
    pub skipped: IntCounterVec,
    /// USD of proxied requests, by provider and kind: `billed` (what the
    /// upstream's usage costs) and `counterfactual` (the same requests sent
    /// untouched, modelled under the provider's caching rules).
    pub cost_usd: CounterVec,
    /// Tokens of the pieces the proxy offloaded, by provider.
    pub offloaded_tokens: IntCounterVec,
    /// Tokens the model fetched back through Cairn's tools, by provider.
    pub fetched_tokens: IntCounterVec,
    /// Exchanges under way (from the rewritten request to the answer's end), by provider.
    pub in_flight: IntGaugeVec,
    /// Exchanges by provider and how they ended: `answered`, `upstream_error`
    /// (the upstream answered an error), `failed` (Cairn answered one: the
    /// upstream was unreachable, timed out, too large), `cut` (a stream ended
    /// early), `refused` (the upstream refused a retrieval round), `client_gone`.
    pub exchanges: IntCounterVec,
    /// Upstream faults by provider and kind: the upstream answered an error
    /// (`rate_limited` 429, `overloaded` 503/529, `client_error` other 4xx,
    /// `server_error` other 5xx), or it failed Cairn: `unreachable`,
    /// `timeout`, `too_large`, `stalled` (a stream silent for the idle limit),
    /// `cut` (a stream that ended early), `round_refused` (an error to a
    /// streamed retrieval round; in a JSON answer it is the error's status kind).
    pub upstream_errors: IntCounterVec,
}

impl ProxyMetrics {
    /// Registers the proxy's metrics in `registry`.
    pub fn register(registry: &Registry) -> prometheus::Result<Self> {
        let counters = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels)?;
            registry.register(Box::new(c.clone()))?;
            Ok::<_, prometheus::Error>(c)
        };
        let added_latency = HistogramVec::new(
            HistogramOpts::new(
                "cairn_proxy_added_latency_seconds",
                "Time the proxy spent on a request besides waiting for the upstream, by provider",
            )
            .buckets(ADDED_LATENCY_BUCKETS.to_vec()),
            &["provider"],
        )?;
        registry.register(Box::new(added_latency.clone()))?;
        let cost_usd = CounterVec::new(
            Opts::new(
                "cairn_proxy_cost_usd_total",
                "USD of proxied requests by provider and kind: billed (the upstream's usage at list \
                 prices) and counterfactual (the same requests sent untouched, modelled)",
            ),
            &["provider", "kind"],
        )?;
        registry.register(Box::new(cost_usd.clone()))?;
        let in_flight = IntGaugeVec::new(
            Opts::new(
                "cairn_proxy_in_flight",
                "Proxied exchanges under way, by provider",
            ),
            &["provider"],
        )?;
        registry.register(Box::new(in_flight.clone()))?;
        Ok(Self {
            requests: counters(
                "cairn_proxy_requests_total",
                "Requests through the LLM proxy, by provider, endpoint and status",
                &["provider", "endpoint", "status"],
            )?,
            added_latency,
            rounds: counters(
                "cairn_proxy_retrieval_rounds_total",
                "Upstream calls the proxy made to answer the model's own memory tool calls, by provider",
                &["provider"],
            )?,
            cache_tokens: counters(
                "cairn_proxy_cache_tokens_total",
                "Prompt-cache input tokens the upstream reported, by provider and kind (read, write)",
                &["provider", "kind"],
            )?,
            tokens_saved: counters(
                "cairn_proxy_tokens_saved_total",
                "Input tokens kept out of upstream requests by the proxy, net of the cache writes its rewrites caused",
                &["provider"],
            )?,
            skipped: counters(
                "cairn_proxy_skipped_total",
                "Proxied requests sent upstream unchanged, by provider and reason (no_messages, unreadable_messages)",
                &["provider", "reason"],
            )?,
            cost_usd,
            offloaded_tokens: counters(
                "cairn_proxy_offloaded_tokens_total",
                "Tokens of the pieces the proxy took out of requests, by provider",
                &["provider"],
            )?,
            fetched_tokens: counters(
                "cairn_proxy_fetched_tokens_total",
                "Tokens the model fetched back through Cairn's tools, by provider (over offloaded: the fetch-back rate)",
                &["provider"],
            )?,
            in_flight,
            exchanges: counters(
                "cairn_proxy_exchanges_total",
                "Proxied exchanges by provider and outcome (answered, upstream_error, failed, cut, refused, client_gone)",
                &["provider", "outcome"],
            )?,
            upstream_errors: counters(
                "cairn_proxy_upstream_errors_total",
                "Upstream faults by provider and kind (rate_limited, overloaded, client_error, \
                 server_error, unreachable, timeout, too_large, stalled, cut, round_refused)",
                &["provider", "kind"],
            )?,
        })
    }
}
