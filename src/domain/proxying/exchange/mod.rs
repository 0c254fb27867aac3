//! One proxied exchange, as a domain use case: a client request and the
//! upstream rounds that answer it. The request has been rewritten
//! ([`crate::domain::proxying::rewrite`]); here each round goes to the
//! [`Upstream`], its usage is accounted, the calls to Cairn's own tools are
//! answered through [`Tools`] and the conversation continued (at most
//! `max_rounds` calls), and the client gets the last answer — whole
//! ([`json`]) or as one well-formed event stream ([`streamed`]) — while the
//! exchange's record in the ledger follows each round ([`record`]).
//! The HTTP side (`http::proxy`) keeps the routes, keys, headers and the
//! implementations of the two ports.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::domain::DomainError;
use crate::domain::ledger::Ledger;
use crate::domain::proxying::Endpoint;
use crate::domain::proxying::exchanges::{ExchangeLedger, Trace};
use crate::domain::proxying::rewrite::Report;
use crate::domain::proxying::usage::{self, Round, Usage};
use crate::domain::proxying::wire::{self, ToolCall, ToolResult};

pub mod json;
pub mod open;
pub mod port;
pub mod record;
pub mod streamed;

pub use open::{Opened, Opening, ToolDefinition, open};
pub use port::{Fault, Reply, Tools, Upstream};
pub use record::Client;

/// The services an exchange reports to.
#[derive(Clone)]
pub struct Services {
    /// Usage, savings and their metrics.
    pub ledger: Arc<Ledger>,
    /// The record of each exchange.
    pub exchanges: Arc<ExchangeLedger>,
}

/// The exchange's bounds.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// Most upstream calls in one exchange.
    pub max_rounds: usize,
    /// Longest wait for a whole answer.
    pub timeout: Duration,
    /// Longest silence inside a streamed answer.
    pub idle: Duration,
    /// Largest whole (not streamed) answer held in memory.
    pub max_answer_bytes: usize,
}

/// What an exchange is about, known before its first round.
pub struct Request {
    /// The API called.
    pub endpoint: Endpoint,
    /// The caller's namespace.
    pub namespace: String,
    /// What the rewrite did.
    pub report: Report,
    /// Cairn's tools added to this request (the calls Cairn answers).
    pub ours: Vec<&'static str>,
    /// The model asked for.
    pub model: String,
    /// When the request arrived.
    pub started: Instant,
}

/// One exchange under way.
pub struct Exchange {
    services: Services,
    bounds: Bounds,
    request: Request,
    tools: Box<dyn Tools>,
    /// The exchange's record in the ledger, until it is finished.
    trace: Mutex<Option<Trace>>,
    /// Time Cairn spent besides waiting for the upstream, once known.
    added: Mutex<Option<Duration>>,
    /// Set once the exchange is finished (counted, recorded).
    finished: AtomicBool,
    /// Whatever the caller keeps for the exchange's life (its place among
    /// the namespace's requests in flight: a stream keeps it until it ends).
    _held: Box<dyn Send + Sync>,
}

impl Exchange {
    /// An exchange whose first round goes upstream now, its record begun
    /// as `trace` ([`record::begin`]); counted in flight until finished.
    pub fn new(
        services: Services,
        bounds: Bounds,
        request: Request,
        tools: Box<dyn Tools>,
        trace: Option<Trace>,
        held: Box<dyn Send + Sync>,
    ) -> Self {
        services
            .ledger
            .metrics()
            .proxy
            .in_flight
            .with_label_values(&[request.endpoint.provider().name()])
            .inc();
        Self {
            services,
            bounds,
            request,
            tools,
            trace: Mutex::new(trace),
            added: Mutex::new(None),
            finished: AtomicBool::new(false),
            _held: held,
        }
    }

    /// What the exchange is about.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// What the rewrite did.
    pub fn report(&self) -> &Report {
        &self.request.report
    }

    fn endpoint(&self) -> Endpoint {
        self.request.endpoint
    }

    /// Records the time Cairn spent besides waiting for the upstream.
    fn record_latency(&self, upstream_wait: Duration) {
        let own = self.request.started.elapsed().saturating_sub(upstream_wait);
        if let Ok(mut added) = self.added.lock() {
            *added = Some(own);
        }
        self.services
            .ledger
            .metrics()
            .proxy
            .added_latency
            .with_label_values(&[self.endpoint().provider().name()])
            .observe(own.as_secs_f64());
    }

    /// Records round `round`'s usage (its `usage` object, answered by `model`
    /// or the request's); answers it as read.
    async fn account_round(
        &self,
        round: usize,
        usage_object: &Value,
        model: Option<&str>,
    ) -> Option<Usage> {
        let model = model.unwrap_or(&self.request.model);
        let read = usage_object
            .as_object()
            .map(|u| wire::of(self.endpoint()).usage(u));
        self.trace_round(model, read);
        let u = read?;
        // Cairn's estimate is of the request it rewrote: the first round's.
        let estimated = (round == 0).then_some(self.request.report.tokens_after);
        let recorded = Round {
            endpoint: self.endpoint(),
            model,
            usage: u,
            estimated_input: estimated,
        };
        usage::record_round(&self.services.ledger, &self.request.namespace, &recorded).await;
        Some(u)
    }

    /// The answer's calls to Cairn's own tools.
    fn our_calls(&self, answer: &Value) -> Vec<ToolCall> {
        wire::of(self.endpoint())
            .calls(answer)
            .into_iter()
            .filter(|c| self.request.ours.contains(&c.name.as_str()))
            .collect()
    }

    /// Runs Cairn's calls, in order, and counts the round.
    async fn answer_calls(&self, calls: Vec<ToolCall>) -> Vec<ToolResult> {
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            let result = self.tools.run(call).await;
            self.trace_retrieval(
                &result.call.name,
                &result.call.arguments,
                &result.content,
                result.is_error,
            );
            results.push(result);
        }
        self.services
            .ledger
            .metrics()
            .proxy
            .rounds
            .with_label_values(&[self.endpoint().provider().name()])
            .inc();
        results
    }

    /// Records the exchange's saving (net of the cache writes its rewrite caused).
    async fn record_saving(&self, first_cache_write: u64) -> Result<u64, DomainError> {
        let report = &self.request.report;
        let caused = if report.governed {
            first_cache_write
        } else {
            0
        };
        let model = Some(self.request.model.as_str()).filter(|m| !m.is_empty());
        usage::record_saving(
            &self.services.ledger,
            &self.request.namespace,
            self.endpoint().provider(),
            model,
            report.saved(),
            caused,
        )
        .await
    }
}
