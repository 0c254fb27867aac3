//! The exchange's record in the ledger ([`crate::domain::proxying::exchanges`]):
//! begun when its first round goes upstream, added to at each round and
//! retrieval, finished when the client's answer ends — or when the client
//! went away first (the exchange is dropped unfinished) — and the exchange's
//! counts in the proxy's metrics.

use std::sync::atomic::Ordering;

use serde_json::Value;

use super::Exchange;
use crate::domain::proxying::Endpoint;
use crate::domain::proxying::exchanges::{Ended, ExchangeLedger, Started, Trace, thread_of};
use crate::domain::proxying::rewrite::Report;
use crate::domain::proxying::spliced::Spliced;
use crate::domain::proxying::usage::Usage;

/// The request as its client sent it, as far as the ledger needs it.
pub struct Client {
    /// Its bytes (empty while the ledger is off).
    bytes: bytes::Bytes,
    /// The thread or session the client named.
    named: Option<String>,
    /// Its parsed value, once the rewrite is done with it (`None` while
    /// the ledger is off): the ledger reads it instead of parsing `bytes`.
    value: Option<Value>,
}

impl Client {
    /// Kept before the rewrite; `named` is the thread or session the client
    /// named. Nothing is kept while the ledger is off.
    pub fn of(exchanges: &ExchangeLedger, body: &Spliced, named: Option<&str>) -> Self {
        Self {
            bytes: if exchanges.is_on() {
                body.shared()
            } else {
                bytes::Bytes::new()
            },
            named: named.map(str::to_owned),
            value: None,
        }
    }

    /// Keeps `value`, the request's value as the client sent it, when the
    /// ledger keeps the request.
    pub fn keep_value(&mut self, value: Value) {
        if !self.bytes.is_empty() {
            self.value = Some(value);
        }
    }
}

/// Begins the record of an exchange whose `body` goes upstream now (`None`
/// when the ledger records nothing).
#[allow(clippy::too_many_arguments)]
pub fn begin(
    exchanges: &ExchangeLedger,
    namespace: &str,
    endpoint: Endpoint,
    model: &str,
    report: &Report,
    ours: &[&'static str],
    client: Client,
    body: &Spliced,
    streamed: bool,
) -> Option<Trace> {
    if !exchanges.is_on() {
        // Nothing is recorded: no copy of the body either.
        return None;
    }
    exchanges.begin(Started {
        namespace,
        thread: thread_of(client.named.as_deref(), &report.opening),
        endpoint,
        model,
        client: client.bytes,
        client_value: client.value,
        upstream: body.shared(),
        streamed,
        tokens: (report.tokens_before, report.tokens_after, &report.method),
        tier: report.tier.name(),
        governor: report.governor.clone(),
        first_offload: report.first_offload.clone(),
        pieces: report.pieces.clone(),
        tools_added: ours,
        skipped: report.skipped.as_deref(),
        counter: report.counter,
    })
}

impl Exchange {
    /// Adds a round's usage to the record.
    pub(super) fn trace_round(&self, model: &str, usage: Option<Usage>) {
        self.traced(|t| t.round(model, usage));
    }

    /// Adds a retrieval to the record.
    pub(super) fn trace_retrieval(
        &self,
        tool: &str,
        arguments: &Value,
        content: &str,
        error: bool,
    ) {
        self.traced(|t| t.retrieval(tool, arguments, content, error));
    }

    fn traced(&self, f: impl FnOnce(&mut Trace)) {
        if let Ok(mut trace) = self.trace.lock()
            && let Some(trace) = trace.as_mut()
        {
            f(trace);
        }
    }

    /// Finishes the record with the status the client got (once: later calls do nothing).
    pub fn finish(&self, status: u16, outcome: &str) {
        self.finish_with(status, outcome);
    }

    /// Counts an upstream fault of `kind` ([`super::Fault::kind`],
    /// [`upstream_fault_of_status`]).
    pub fn upstream_fault(&self, kind: &'static str) {
        let provider = self.endpoint().provider().name();
        self.services
            .ledger
            .metrics()
            .proxy
            .upstream_errors
            .with_label_values(&[provider, kind])
            .inc();
    }

    fn finish_with(&self, status: u16, outcome: &str) {
        if self.finished.swap(true, Ordering::Relaxed) {
            return;
        }
        let metrics = &self.services.ledger.metrics().proxy;
        let provider = self.endpoint().provider().name();
        metrics.in_flight.with_label_values(&[provider]).dec();
        let class = outcome.split(':').next().unwrap_or(outcome);
        metrics
            .exchanges
            .with_label_values(&[provider, class])
            .inc();
        let Some(trace) = self.trace.lock().ok().and_then(|mut t| t.take()) else {
            return;
        };
        let latency = self.request.started.elapsed();
        let added = self.added.lock().ok().and_then(|a| *a).unwrap_or_default();
        self.services.exchanges.finish(
            trace,
            Ended {
                status,
                outcome: outcome.to_owned(),
                latency,
                added,
            },
        );
    }
}

impl Drop for Exchange {
    /// An exchange dropped unfinished: the client went away (its request
    /// was cancelled, or its stream closed) before the answer ended.
    fn drop(&mut self) {
        self.finish_with(0, "client_gone");
    }
}

/// The fault kind of an error status the upstream answered.
pub fn upstream_fault_of_status(status: u16) -> &'static str {
    match status {
        429 => "rate_limited",
        503 | 529 => "overloaded",
        400..=499 => "client_error",
        _ => "server_error",
    }
}
