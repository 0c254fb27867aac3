//! What every round of an exchange does, streamed or not: account the
//! answer's usage, find the calls to Cairn's own tools, answer them.

use serde_json::Value;

use super::{Exchange, tools};
use crate::domain::proxying::usage::{self, Round, Usage};
use crate::domain::proxying::wire;
use crate::http::error::AppError;
use crate::http::upstream;

impl Exchange {
    /// Sends one round's request upstream; answers the answer's head.
    pub(super) async fn send(&self, bytes: bytes::Bytes) -> Result<reqwest::Response, AppError> {
        let proxy = self.proxy();
        upstream::send(
            &proxy.client,
            &self.url,
            self.headers.clone(),
            bytes,
            proxy.timeout,
        )
        .await
    }

    /// Records round `round`'s usage (its `usage` object, answered by `model`
    /// or the request's); answers it as read.
    pub(super) async fn account_round(
        &self,
        round: usize,
        usage_object: &Value,
        model: Option<&str>,
    ) -> Option<Usage> {
        let model = model.unwrap_or(&self.model);
        let read = Usage::of(self.endpoint, usage_object);
        self.trace_round(model, read);
        let u = read?;
        // Cairn's estimate is of the request it rewrote: the first round's.
        let estimated = (round == 0).then_some(self.report.tokens_after);
        let recorded = Round {
            endpoint: self.endpoint,
            model,
            usage: u,
            estimated_input: estimated,
        };
        usage::record_round(&self.state.ledger, &self.caller.namespace, &recorded).await;
        Some(u)
    }

    /// The answer's calls to Cairn's own tools.
    pub(super) fn our_calls(&self, answer: &Value) -> Vec<tools::ToolCall> {
        wire::of(self.endpoint)
            .calls(answer)
            .into_iter()
            .filter(|c| self.ours.contains(&c.name.as_str()))
            .collect()
    }

    /// Runs Cairn's calls, in order, and counts the round.
    pub(super) async fn answer_calls(&self, calls: Vec<tools::ToolCall>) -> Vec<tools::ToolResult> {
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            let result = tools::run(&self.state, &self.caller, call).await;
            self.trace_retrieval(
                &result.call.name,
                &result.call.arguments,
                &result.content,
                result.is_error,
            );
            results.push(result);
        }
        self.state
            .metrics
            .proxy
            .rounds
            .with_label_values(&[self.endpoint.provider().name()])
            .inc();
        results
    }
}
