//! The record of one exchange: begun when its rewritten body goes upstream
//! (cheap: it keeps the upstream's bytes, and hands the client's to a
//! blocking thread that reduces them to their shared-prefix profile, so
//! they are not held for the whole exchange), added to at each round and
//! retrieval, and settled once the client's answer has ended — off the
//! request's path: the body redacted and placed in its thread as a delta,
//! the cost priced and the counterfactual modelled.

use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;

use super::cost::{self, Caching, Profile};
use super::threads::Threads;
use super::{Figures, Piece, Retrieval, RoundFigures, target_of};
use crate::clock::now_ms;
use crate::domain::ledger::pricing::Pricing;
use crate::domain::proxying::first_offload::FirstOffload;
use crate::domain::proxying::govern_cost::GovernDecision;
use crate::domain::proxying::usage::Usage;
use crate::domain::proxying::wire;
use crate::domain::proxying::{Endpoint, Provider};
use crate::domain::redact::redact_bytes;
use crate::domain::tokens::Counter;
use crate::storage::meta::ExchangeRow;

/// What an exchange knows when its first round goes upstream.
pub struct Started<'a> {
    /// The caller's namespace.
    pub namespace: &'a str,
    /// Its thread ([`super::thread_of`]).
    pub thread: String,
    /// The endpoint called.
    pub endpoint: Endpoint,
    /// The model asked for.
    pub model: &'a str,
    /// The request's bytes as the client sent them (shared with the request, not copied).
    pub client: Bytes,
    /// The same request parsed, when the caller has it (else the bytes are
    /// parsed again for its profile).
    pub client_value: Option<Value>,
    /// The request's bytes as they go upstream (shared, not copied).
    pub upstream: Bytes,
    /// True when the client asked for a stream.
    pub streamed: bool,
    /// Tokens as the client sent it, as it goes upstream, and how they were counted.
    pub tokens: (u64, u64, &'a str),
    /// The governor's tier.
    pub tier: &'a str,
    /// The governor's decision, if its tier asked for a rewrite.
    pub governor: Option<GovernDecision>,
    /// The decision on the conversation's first offload, if it was weighed.
    pub first_offload: Option<FirstOffload>,
    /// What was taken out.
    pub pieces: Vec<Piece>,
    /// Cairn's tools added.
    pub tools_added: &'a [&'static str],
    /// Why the request went unchanged, if it did.
    pub skipped: Option<&'a str>,
    /// The counter of the request's model (for retrieval answers).
    pub counter: Counter,
}

/// How an exchange ended.
pub struct Ended {
    /// The status the client got (0 when it went away first).
    pub status: u16,
    /// What happened ([`Figures::outcome`]).
    pub outcome: String,
    /// From arrival to the answer's end.
    pub latency: Duration,
    /// Of that, Cairn's own time.
    pub added: Duration,
}

/// One exchange being recorded.
pub struct Trace {
    namespace: String,
    thread: String,
    endpoint: Endpoint,
    model: String,
    at_ms: i64,
    client: ClientRequest,
    upstream: Bytes,
    pieces: Vec<Piece>,
    figures: Figures,
    usages: Vec<Option<Usage>>,
    counter: Counter,
}

/// A settled exchange.
pub(super) struct Finished {
    /// Its row, figures written.
    pub row: ExchangeRow,
    /// Its figures.
    pub figures: Figures,
    /// The provider called.
    pub provider: Provider,
}

impl Trace {
    /// Begins the record.
    pub(super) fn begin(s: Started<'_>) -> Self {
        Self {
            namespace: s.namespace.to_owned(),
            thread: s.thread,
            endpoint: s.endpoint,
            model: s.model.to_owned(),
            at_ms: now_ms(),
            client: ClientRequest::of(s.endpoint, s.client, s.client_value),
            upstream: s.upstream,
            figures: Figures {
                streamed: s.streamed,
                tokens_client: s.tokens.0,
                tokens_upstream: s.tokens.1,
                token_method: s.tokens.2.to_owned(),
                tier: s.tier.to_owned(),
                governor: s.governor,
                first_offload: s.first_offload,
                tools_added: s.tools_added.iter().map(|t| (*t).to_owned()).collect(),
                skipped: s.skipped.map(str::to_owned),
                ..Figures::default()
            },
            pieces: s.pieces,
            usages: Vec::new(),
            counter: s.counter,
        }
    }

    /// Adds an upstream round answered by `model` with `usage` (if it said).
    pub fn round(&mut self, model: &str, usage: Option<Usage>) {
        self.usages.push(usage);
        self.figures.rounds.push(RoundFigures {
            model: model.to_owned(),
            ..RoundFigures::default()
        });
    }

    /// Adds a call to one of Cairn's tools, answered with `content`, to the latest round.
    pub fn retrieval(&mut self, tool: &str, arguments: &Value, content: &str, error: bool) {
        let tokens = self.counter.count(content);
        self.figures.fetched_tokens += tokens;
        let retrieval = Retrieval {
            tool: tool.to_owned(),
            target: target_of(arguments),
            bytes: content.len() as u64,
            tokens,
            error,
        };
        if let Some(round) = self.figures.rounds.last_mut() {
            round.retrievals.push(retrieval);
        }
    }

    /// Settles the record: places its body in its thread (redacted first
    /// with `redact`), prices it and models its counterfactual.
    pub(super) fn settle(
        mut self,
        threads: &Threads,
        pricing: &Pricing,
        ended: Ended,
        redact: bool,
    ) -> Finished {
        let provider = self.endpoint.provider();
        let caching = self.client.caching;
        let (client_bytes, upstream_bytes) = (self.client.bytes, self.upstream.len());
        let profile = self.client.profile.get();
        let untouched = self.pieces.is_empty() && self.figures.tools_added.is_empty();
        let body = if redact {
            redact_bytes(&self.upstream).0
        } else {
            Vec::from(std::mem::take(&mut self.upstream))
        };
        // The id is taken when the exchange is placed in its thread, so a
        // parent's id is always below its child's.
        let key = (self.namespace.clone(), self.thread.clone());
        let ids = self.pieces.iter().map(|p| p.memory_id.clone()).collect();
        let new = || new_id(now_ms());
        let placed = threads.place(key.clone(), new, body, profile, ids, self.at_ms);
        let id = placed.id.clone();
        // Pieces the thread's previous request had taken out already are
        // counted, not listed again: a conversation's record stays linear.
        let (carried, pieces): (Vec<Piece>, Vec<Piece>) = std::mem::take(&mut self.pieces)
            .into_iter()
            .partition(|p| placed.earlier_pieces.contains(&p.memory_id));
        self.figures.pieces = pieces;
        self.figures.pieces_carried = carried.len();
        self.figures.tokens_carried = carried.iter().map(|p| p.tokens).sum();

        let model = Some(self.model.as_str()).filter(|m| !m.is_empty());
        let price = pricing.price(model);
        for (round, usage) in self.figures.rounds.iter_mut().zip(&self.usages) {
            let u = usage.unwrap_or_default();
            let round_price = pricing.price(Some(round.model.as_str()).filter(|m| !m.is_empty()));
            round.input = u.input;
            round.cache_read = u.cache_read;
            round.cache_write = u.cache_write;
            round.output = u.output;
            round.usd = caching.cost(&round_price, u.input, u.cache_read, u.cache_write, u.output);
        }
        self.figures.billed_usd = self.figures.rounds.iter().map(|r| r.usd).sum();
        let first = self.usages.first().copied().flatten();
        let last_output = self
            .usages
            .last()
            .copied()
            .flatten()
            .map_or(0, |u| u.output);
        self.figures.counterfactual = match first {
            Some(first) if untouched && self.usages.len() == 1 => {
                cost::as_billed(caching, &price, first)
            }
            Some(first) => cost::counterfactual(
                caching,
                &price,
                first,
                cost::untouched_input(first.input, client_bytes, upstream_bytes),
                last_output,
                placed.previous,
            ),
            None => cost::Counterfactual {
                method: "not known: the upstream reported no usage".into(),
                ..cost::Counterfactual::default()
            },
        };
        let untouched_input = first.map(|_| self.figures.counterfactual.input);
        threads.finished(&key, &id, untouched_input);
        self.figures.price_entry = price.entry;
        self.figures.outcome = ended.outcome;
        self.figures.latency_ms = u64::try_from(ended.latency.as_millis()).unwrap_or(u64::MAX);
        self.figures.added_ms = ended.added.as_secs_f64() * 1e3;
        let row = ExchangeRow {
            id,
            namespace: self.namespace,
            thread: self.thread,
            api: self.endpoint.name().to_owned(),
            model: self.model,
            at_ms: self.at_ms,
            status: i64::from(ended.status),
            parent: placed.parent,
            prefix: i64::try_from(placed.delta.prefix).unwrap_or(i64::MAX),
            suffix: i64::try_from(placed.delta.suffix).unwrap_or(i64::MAX),
            body: placed.delta.middle,
            figures: serde_json::to_string(&self.figures).unwrap_or_default(),
        };
        Finished {
            row,
            figures: self.figures,
            provider,
        }
    }
}

/// The client's request as its record needs it: how the provider caches
/// it, its size, and its [`Profile`] (what decides a prefix shared with the
/// thread's next request).
struct ClientRequest {
    caching: Caching,
    bytes: usize,
    profile: Profiled,
}

/// A profile worked out, or being worked out on a blocking thread.
enum Profiled {
    Ready(Profile),
    Pending(mpsc::Receiver<Profile>),
}

impl ClientRequest {
    /// Reads `client`, sent to `endpoint`: its caching at once (a scan), its
    /// profile on a blocking thread when a runtime is there, here
    /// otherwise, from `value` (the request parsed) or, without it, from
    /// the bytes parsed again there; either is dropped once done.
    fn of(endpoint: Endpoint, client: Bytes, value: Option<Value>) -> Self {
        let caching = Caching::of(endpoint.provider(), &client);
        let bytes = client.len();
        let list = wire::of(endpoint).conversation_key();
        let work = move || match value {
            Some(value) => Profile::of(&value, list),
            None => serde_json::from_slice::<Value>(&client)
                .map(|value| Profile::of(&value, list))
                .unwrap_or_default(),
        };
        let profile = match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let (done, profile) = mpsc::sync_channel(1);
                drop(runtime.spawn_blocking(move || {
                    // The trace may be gone already (nothing then reads it).
                    let _ = done.send(work());
                }));
                Profiled::Pending(profile)
            }
            Err(_) => Profiled::Ready(work()),
        };
        Self {
            caching,
            bytes,
            profile,
        }
    }
}

impl Profiled {
    /// The profile, waited for if it is still being worked out (settling
    /// runs on a blocking thread, so the wait blocks nothing else); the
    /// empty profile if its work failed.
    fn get(&mut self) -> Profile {
        match self {
            Self::Ready(profile) => std::mem::take(profile),
            Self::Pending(pending) => pending.recv().unwrap_or_default(),
        }
    }
}

/// A new exchange id: `ex_`, the time in milliseconds (13 hex digits, so
/// ids sort by time) and 8 random bytes.
fn new_id(at_ms: i64) -> String {
    let mut random = [0u8; 8];
    if getrandom::fill(&mut random).is_err() {
        // No system randomness: the clock's nanoseconds are unique enough here.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        random[..4].copy_from_slice(&nanos.to_le_bytes());
    }
    format!("ex_{:013x}{}", at_ms.max(0), hex::encode(random))
}
