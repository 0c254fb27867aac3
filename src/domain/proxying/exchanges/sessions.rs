//! Sessions: a namespace's exchanges grouped by thread, with the figures a
//! user audits a conversation by — turns, tokens sent against untouched,
//! billed against counterfactual cost, cache hit ratio, fetch-back rate.

use std::collections::HashMap;

use super::{ExchangeFilter, ExchangeLedger, ExchangeRecord};
use crate::domain::DomainError;

/// Most exchanges read to build the session list (the newest ones).
pub const SESSION_SCAN: u32 = 5_000;

/// One thread's exchanges, summed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionSummary {
    /// The thread.
    pub thread: String,
    /// Its first exchange, Unix milliseconds.
    pub first_ms: i64,
    /// Its last exchange, Unix milliseconds.
    pub last_ms: i64,
    /// Exchanges (requests the client made).
    pub turns: usize,
    /// The models asked for, in order of first use.
    pub models: Vec<String>,
    /// Tokens the client sent.
    pub tokens_client: u64,
    /// Tokens that went upstream.
    pub tokens_upstream: u64,
    /// Input tokens the upstream billed, cached ones included.
    pub input: u64,
    /// Of those, read from the prompt cache.
    pub cache_read: u64,
    /// USD billed.
    pub billed_usd: f64,
    /// USD the same requests would have cost untouched.
    pub counterfactual_usd: f64,
    /// Pieces taken out (new ones, not those carried again).
    pub pieces: usize,
    /// Tokens of those pieces.
    pub offloaded_tokens: u64,
    /// Calls the model made to Cairn's tools.
    pub retrievals: usize,
    /// Tokens the model fetched back.
    pub fetched_tokens: u64,
    /// Exchanges that went upstream unchanged (skipped).
    pub skipped: usize,
}

impl SessionSummary {
    /// Cache reads over input tokens, 0–1.
    pub fn cache_hit_ratio(&self) -> f64 {
        ratio(self.cache_read, self.input)
    }

    /// Tokens fetched back over tokens offloaded, 0 when nothing was
    /// offloaded: the signal that offloading went too far.
    pub fn fetch_back_rate(&self) -> f64 {
        ratio(self.fetched_tokens, self.offloaded_tokens)
    }

    fn add(&mut self, record: &ExchangeRecord) {
        let f = &record.figures;
        if self.turns == 0 {
            self.thread.clone_from(&record.thread);
            self.first_ms = record.at_ms;
            self.last_ms = record.at_ms;
        }
        self.first_ms = self.first_ms.min(record.at_ms);
        self.last_ms = self.last_ms.max(record.at_ms);
        self.turns += 1;
        if !self.models.contains(&record.model) {
            self.models.push(record.model.clone());
        }
        self.tokens_client += f.tokens_client;
        self.tokens_upstream += f.tokens_upstream;
        for round in &f.rounds {
            self.input += round.input;
            self.cache_read += round.cache_read;
            self.retrievals += round.retrievals.len();
        }
        self.billed_usd += f.billed_usd;
        self.counterfactual_usd += f.counterfactual.usd;
        self.pieces += f.pieces.len();
        self.offloaded_tokens += f.pieces.iter().map(|p| p.tokens).sum::<u64>();
        self.fetched_tokens += f.fetched_tokens;
        self.skipped += usize::from(f.skipped.is_some());
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Groups exchanges by thread, the thread with the newest exchange first.
pub fn sessions(records: &[ExchangeRecord]) -> Vec<SessionSummary> {
    let mut by_thread: HashMap<&str, SessionSummary> = HashMap::new();
    for record in records {
        by_thread
            .entry(record.thread.as_str())
            .or_default()
            .add(record);
    }
    let mut list: Vec<SessionSummary> = by_thread.into_values().collect();
    list.sort_by(|a, b| {
        b.last_ms
            .cmp(&a.last_ms)
            .then_with(|| a.thread.cmp(&b.thread))
    });
    list
}

impl ExchangeLedger {
    /// A namespace's newest exchanges matching `filter`, up to `max`, read
    /// a page at a time, newest first.
    pub async fn newest(
        &self,
        namespace: &str,
        filter: ExchangeFilter,
        max: u32,
    ) -> Result<Vec<ExchangeRecord>, DomainError> {
        const PAGE: u32 = 500;
        let mut all: Vec<ExchangeRecord> = Vec::new();
        let mut before = None;
        while (all.len() as u32) < max {
            let page = PAGE.min(max - all.len() as u32);
            let records = self
                .list(namespace, filter.clone(), before.take(), page)
                .await?;
            let done = (records.len() as u32) < page;
            before = records.last().map(|r| r.id.clone());
            all.extend(records);
            if done {
                break;
            }
        }
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::proxying::exchanges::{Figures, Piece, Retrieval, RoundFigures};

    fn exchange(thread: &str, at_ms: i64, figures: Figures) -> ExchangeRecord {
        ExchangeRecord {
            id: format!("ex_{at_ms:x}"),
            thread: thread.to_owned(),
            api: "messages".to_owned(),
            model: "m".to_owned(),
            at_ms,
            status: 200,
            figures,
        }
    }

    fn figures(input: u64, cache_read: u64, offloaded: u64, fetched: u64) -> Figures {
        let mut f = Figures {
            tokens_client: input + offloaded,
            tokens_upstream: input,
            billed_usd: 0.5,
            fetched_tokens: fetched,
            ..Figures::default()
        };
        f.counterfactual.usd = 2.0;
        f.rounds.push(RoundFigures {
            input,
            cache_read,
            retrievals: (0..u64::from(fetched > 0))
                .map(|_| Retrieval {
                    tool: "memory_grep".to_owned(),
                    target: None,
                    bytes: 1,
                    tokens: fetched,
                    error: false,
                })
                .collect(),
            ..RoundFigures::default()
        });
        if offloaded > 0 {
            f.pieces.push(Piece {
                memory_id: "ab".to_owned(),
                tokens: offloaded,
                message: 1,
                governed: false,
            });
        }
        f
    }

    #[test]
    fn exchanges_sum_by_thread_newest_thread_first() {
        let records = vec![
            exchange("b", 30, figures(100, 0, 0, 0)),
            exchange("a", 20, figures(1_000, 900, 0, 50)),
            exchange("a", 10, figures(1_000, 0, 4_000, 0)),
        ];
        let list = sessions(&records);
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].thread, "b");
        let a = &list[1];
        assert_eq!((a.turns, a.first_ms, a.last_ms), (2, 10, 20));
        assert_eq!((a.tokens_client, a.tokens_upstream), (6_000, 2_000));
        assert!((a.cache_hit_ratio() - 0.45).abs() < 1e-9);
        assert!((a.fetch_back_rate() - 50.0 / 4_000.0).abs() < 1e-9);
        assert_eq!((a.pieces, a.retrievals), (1, 1));
        assert!((a.billed_usd - 1.0).abs() < 1e-9 && (a.counterfactual_usd - 4.0).abs() < 1e-9);
        assert_eq!(list[0].fetch_back_rate(), 0.0);
    }
}
