//! Offload and govern one provider request, deterministically: the same
//! history always becomes the same bytes, so a growing conversation keeps a
//! byte-stable prefix and the provider's prompt cache keeps hitting.
//!
//! 1. *Offload*: every text over the threshold — tool results in every
//!    content shape, big user (and assistant) texts — is stored and replaced
//!    by the `pointer` strategy's marker and summary. The replacement depends
//!    only on the content, so it is made everywhere, inside the cached prefix
//!    too: what the provider cached was the replaced text already. While the
//!    request holds no pointer and Cairn's tools would be new to it, texts
//!    are offloaded only once a message's texts pay for the cache those
//!    tools break ([`super::first_offload`]), and then all of them, the
//!    earlier ones too; until then the request goes up untouched.
//! 2. *Govern*: the tier of the offloaded request (calibrated counts) decides
//!    whether smaller texts go as well (`warn`: over 6,000 characters,
//!    `pointer_only`: over 1,000), never inside the cached prefix (up to the
//!    last `cache_control`, and the first `preserve_prefix` messages). The tier
//!    only rises while a conversation grows, so an earlier message changes at
//!    most at a tier change, never from one turn to the next. Each
//!    conversation keeps the highest tier it reached ([`super::tiers`]).
//!    (The governor's observation masking is not used here: keeping "the last
//!    K results" moves its edge every turn and would rewrite an earlier
//!    message each time.)

use serde_json::Value;

use super::Endpoint;
use super::exchanges::Piece;
use super::exchanges::cost::Caching;
use super::first_offload::{self, Envelope, FirstOffload, json_bytes};
use super::govern_cost::{GovernDecision, weigh};
use super::tiers::{ConversationTiers, conversation_of};
use super::wire::{self, Conversation};
use crate::domain::DomainError;
use crate::domain::compress::{
    Compressor, Input, Offloaded, Options, Outcome, Policy, Strategy, marker_chars,
    pointer_candidates,
};
use crate::domain::governor::{
    GovernorConfig, POINTER_ONLY_THRESHOLD_CHARS, Tier, WARN_THRESHOLD_CHARS,
};
use crate::domain::ledger::Ledger;
use crate::domain::tokens::Counter;

/// The skip reason of a request without a message list.
const NO_MESSAGES: &str = "no messages";

/// How the proxy rewrites requests.
#[derive(Clone, Debug)]
pub struct RewriteSettings {
    /// Texts longer than this many characters are offloaded.
    pub offload_chars: usize,
    /// Leading messages the governor's compression never edits.
    pub preserve_prefix: usize,
    /// Cairn's tools join an agent's requests from the first on (else only
    /// once the conversation holds a pointer).
    pub tools_for_agents: bool,
}

/// What rewriting a request did.
#[derive(Clone, Debug)]
pub struct Report {
    /// Tokens of the request as the client sent it (calibrated).
    pub tokens_before: u64,
    /// Tokens of the request as it goes upstream (calibrated).
    pub tokens_after: u64,
    /// How tokens were counted.
    pub method: String,
    /// Texts replaced by markers.
    pub offloaded: usize,
    /// The governor's tier of the offloaded request.
    pub tier: Tier,
    /// True when the tier's compression edited something (it may move the
    /// cached prefix: cache writes of that call count against the saving).
    pub governed: bool,
    /// The counter of the request's model (for later rounds' estimates).
    pub counter: Counter,
    /// Why the request went upstream unchanged, if it did.
    pub skipped: Option<String>,
    /// The pieces taken out.
    pub pieces: Vec<Piece>,
    /// What identifies the request's conversation ([`conversation_of`]).
    pub opening: [u8; 32],
    /// The governor's decision on a rewrite beyond offload, when its tier asked for one.
    pub governor: Option<GovernDecision>,
    /// The decision on the conversation's first offload, when the request
    /// held texts to offload but no pointer yet, and Cairn's tools would be
    /// new to it ([`super::first_offload`]).
    pub first_offload: Option<FirstOffload>,
}

impl Report {
    /// Why the request was skipped, as a metric label (`no_messages`,
    /// `unreadable_messages`); the full reason is in [`Report::skipped`].
    pub fn skip_reason(&self) -> Option<&'static str> {
        self.skipped.as_deref().map(|why| {
            if why == NO_MESSAGES {
                "no_messages"
            } else {
                "unreadable_messages"
            }
        })
    }

    /// Tokens kept out of the request.
    pub fn saved(&self) -> u64 {
        self.tokens_before.saturating_sub(self.tokens_after)
    }

    fn unchanged(why: String, model: Option<&str>, opening: [u8; 32]) -> Self {
        Self {
            pieces: Vec::new(),
            opening,
            governor: None,
            first_offload: None,
            tokens_before: 0,
            tokens_after: 0,
            method: String::new(),
            offloaded: 0,
            tier: Tier::Normal,
            governed: false,
            counter: Counter::for_model(model),
            skipped: Some(why),
        }
    }
}

/// The domain services a rewrite uses.
pub struct Rewriter<'a> {
    /// Compression (stores what it takes out).
    pub compressor: &'a Compressor,
    /// Calibration and governor counters.
    pub ledger: &'a Ledger,
    /// Governor limits.
    pub governor: &'a GovernorConfig,
    /// Thresholds.
    pub settings: &'a RewriteSettings,
    /// The tier each conversation reached (it only rises).
    pub tiers: &'a ConversationTiers,
}

impl Rewriter<'_> {
    /// Offloads and governs `body` in place. A message list Cairn cannot read
    /// (a shape it does not know, broken tool pairs) goes upstream as it came,
    /// and the report says why: the provider is the judge of its own API.
    /// `session` is the client's own session id, if it sends one: with the
    /// conversation's opening it names the conversation whose tier only rises.
    /// `new_tools_bytes`: the bytes of the tools Cairn would add to this
    /// request once it holds a pointer (0 when they are there whatever
    /// happens): while it holds none, its first offload must pay for them.
    pub async fn rewrite(
        &self,
        namespace: &str,
        endpoint: Endpoint,
        body: &mut Value,
        thread: Option<String>,
        session: Option<&str>,
        new_tools_bytes: usize,
    ) -> Result<Report, DomainError> {
        let model = body["model"].as_str().map(str::to_owned);
        let opening = conversation_of(endpoint, body, session);
        let caching = Caching::of_value(endpoint.provider(), body);
        let wire = wire::of(endpoint);
        let conversation = match wire.take_conversation(body) {
            Ok(Some(conversation)) => conversation,
            Ok(None) => {
                return Ok(Report::unchanged(
                    NO_MESSAGES.into(),
                    model.as_deref(),
                    opening,
                ));
            }
            Err(e) => return Ok(Report::unchanged(e.to_string(), model.as_deref(), opening)),
        };
        let Conversation {
            format,
            messages,
            system,
            items,
        } = conversation;
        let mut input = Input {
            messages,
            system,
            format: Some(format.name().to_owned()),
            model: model.clone(),
            thread: thread.clone(),
        };
        let mut offload = Options {
            threshold_chars: self.settings.offload_chars,
            keep_recent: Some(0),
            respect_cache_control: false,
            ..Options::default()
        };
        let first_offload = if new_tools_bytes > 0 {
            // A walk over the whole history (its pieces, its bytes up to the
            // message weighed): off the async workers, as compress's own is.
            let envelope_bytes = wire.envelope_bytes(body);
            let price = self.ledger.pricing().price(model.as_deref());
            let options = offload.clone();
            let (back, decision) = tokio::task::spawn_blocking(move || {
                let candidates = pointer_candidates(&input, &options);
                let decision = (!candidates.is_empty()).then(|| {
                    let envelope = Envelope {
                        messages: &input.messages,
                        envelope_bytes: envelope_bytes
                            + input.system.as_ref().map_or(0, json_bytes),
                        tools_bytes: new_tools_bytes,
                        marker_chars: marker_chars(&options),
                        caching,
                    };
                    first_offload::weigh(&candidates, &envelope, &price)
                });
                (input, decision)
            })
            .await
            .map_err(DomainError::internal)?;
            input = back;
            // No message pays: the request goes up as the client sent it.
            // Once one does, the tools break the whole prefix anyway, so
            // the texts before it go too: written smaller on this request,
            // read smaller on every later one.
            if decision.as_ref().is_some_and(|d| d.from_message.is_none()) {
                offload.preserve_prefix = input.messages.len();
            }
            decision
        } else {
            None
        };
        let first = self.compress(namespace, input, offload).await?;
        let m = model.as_deref();
        let before = self
            .ledger
            .calibrate(namespace, m, first.counter, first.tokens_before)
            .await;
        let offloaded = self
            .ledger
            .calibrate(namespace, m, first.counter, first.tokens_after)
            .await;
        let now = Tier::of(offloaded.tokens, self.governor.limits(namespace, m).0);
        let tier = self.tiers.rise(namespace, opening, now);
        self.ledger.record_governor(namespace, tier.name()).await?;
        let threshold = match tier {
            Tier::Normal => usize::MAX,
            Tier::Warn => WARN_THRESHOLD_CHARS,
            Tier::PointerOnly => POINTER_ONLY_THRESHOLD_CHARS,
        };
        let mut offloaded_count = first.offloaded.len();
        let mut pieces = pieces_of(&first.offloaded, false);
        let mut outcome = first;
        let mut governed = false;
        let mut decision = None;
        if threshold < self.settings.offload_chars {
            let input = Input {
                messages: std::mem::take(&mut outcome.messages),
                system: outcome.system.take(),
                format: Some(format.name().to_owned()),
                model: model.clone(),
                thread,
            };
            let govern = Options {
                threshold_chars: threshold,
                keep_recent: Some(0),
                preserve_prefix: self.settings.preserve_prefix,
                ..Options::default()
            };
            // Nothing offloaded yet and Cairn's tools new to the request:
            // the governor's rewrite would bring them, and they come first
            // in the cache order, so all of the request is written again.
            let tools_new = (new_tools_bytes > 0 && outcome.offloaded.is_empty())
                .then_some((new_tools_bytes / first_offload::BYTES_PER_TOKEN) as u64);
            let weighed = Weighed {
                namespace,
                opening,
                caching,
                model: m,
                tokens: outcome.tokens_after,
                tools_new,
            };
            decision = self.decide(&weighed, &input, &govern).await?;
            if let Some(d) = decision.as_mut().filter(|d| d.governed) {
                outcome = self.compress(namespace, input, govern).await?;
                governed = !outcome.offloaded.is_empty();
                d.governed = governed;
                if governed {
                    self.tiers.mark_governed(namespace, opening);
                }
                offloaded_count += outcome.offloaded.len();
                pieces.extend(pieces_of(&outcome.offloaded, true));
            } else {
                outcome.messages = input.messages;
                outcome.system = input.system;
            }
        }
        let after = self
            .ledger
            .calibrate(namespace, m, outcome.counter, outcome.tokens_after)
            .await;
        let report = Report {
            tokens_before: before.tokens,
            tokens_after: after.tokens,
            method: before.method,
            offloaded: offloaded_count,
            tier,
            governed,
            counter: outcome.counter,
            skipped: None,
            pieces,
            opening,
            governor: decision,
            first_offload,
        };
        let rewritten = Conversation {
            format,
            messages: outcome.messages,
            system: outcome.system,
            items,
        };
        wire.put_back(body, rewritten);
        Ok(report)
    }

    /// Whether to make the governor's rewrite of `input` with `options`
    /// ([`super::govern_cost`]); `None` when it would change nothing.
    async fn decide(
        &self,
        w: &Weighed<'_>,
        input: &Input,
        options: &Options,
    ) -> Result<Option<GovernDecision>, DomainError> {
        if self.tiers.governed(w.namespace, w.opening) {
            return Ok(Some(GovernDecision {
                governed: true,
                reason: "governed_before".into(),
                removed_tokens: 0,
                tail_tokens: 0,
                turns_ahead: 0,
                cost_usd: 0.0,
                saving_usd: 0.0,
            }));
        }
        let policy = Policy::Strategy(Strategy::Pointer);
        let trial = self
            .compressor
            .compress(w.namespace, input.clone(), policy, options.clone(), true)
            .await?;
        let Some(first) = trial.offloaded.iter().map(|o| o.index).min() else {
            return Ok(None);
        };
        let tail_tokens = match w.tools_new {
            Some(tools) => w.tokens + tools,
            None => {
                let tail = input.messages.get(first..).unwrap_or_default();
                trial.counter.count_messages(tail, None)
            }
        };
        let turns = input
            .messages
            .iter()
            .filter(|m| m["role"] == "assistant")
            .count() as u64;
        let price = self.ledger.pricing().price(w.model);
        let removed = w.tokens.saturating_sub(trial.tokens_after);
        Ok(Some(weigh(w.caching, &price, removed, tail_tokens, turns)))
    }

    async fn compress(
        &self,
        namespace: &str,
        input: Input,
        options: Options,
    ) -> Result<Outcome, DomainError> {
        self.compressor
            .compress(
                namespace,
                input,
                Policy::Strategy(Strategy::Pointer),
                options,
                false,
            )
            .await
    }
}

/// What a governor decision weighs besides the messages.
struct Weighed<'a> {
    namespace: &'a str,
    opening: [u8; 32],
    caching: Caching,
    model: Option<&'a str>,
    /// Tokens of the offloaded request.
    tokens: u64,
    /// Tokens of Cairn's tools when the rewrite would be the first to bring
    /// them (the whole request is then written to the cache again).
    tools_new: Option<u64>,
}

/// The ledger's record of what a compression took out.
fn pieces_of(offloaded: &[Offloaded], governed: bool) -> Vec<Piece> {
    offloaded
        .iter()
        .map(|o| Piece {
            memory_id: o.id.clone(),
            tokens: o.tokens,
            message: o.index,
            governed,
        })
        .collect()
}
