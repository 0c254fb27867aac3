//! Whether a conversation's first offload pays for the cache it breaks.
//!
//! An offload is byte-stable — the same content always becomes the same
//! marker — but the first one of a conversation also brings Cairn's tools,
//! and tools come first in the provider's cache order: the request that
//! adds them writes its whole prefix to the cache again instead of reading
//! it. Claude Code sends an envelope of ~22,000 tokens, and with its own
//! defaults (a Bash output over 30,000 characters goes to a file, the model
//! gets a preview) the outputs that reach a proxy are a few thousand tokens:
//! offloading one of them early saved less than the write it caused, and a
//! recorded session cost 1.26× the direct bill (bench/REPORT.md, "The real
//! Claude Code, live").
//!
//! So while a request holds no pointer yet and Cairn's tools would be new to
//! it, the texts over the offload threshold are weighed message by message,
//! in order, until one message's texts pay for the break. Then every text
//! over the threshold is offloaded, the earlier ones that did not pay alone
//! too: the tools write the whole request again anyway, so taking them out
//! on that request costs nothing more and saves them on every later one
//! (and from there on an offload only replaces new content: nothing cached
//! moves). While no message pays, the request goes up as the client sent
//! it. The break is paid once and every later offload benefits, so
//! the saving counts the message's own texts and those the conversation is
//! expected to bring: as much per request as it has brought so far. The
//! saving must come within [`AHEAD`] requests: a horizon that grew with the
//! conversation ("it will go on about as long as it has gone") offloaded at
//! the last request of recorded sessions and cost them 1.10–1.29× the
//! direct bill; a conversation that goes on longer only gains more. A
//! message's texts pay when
//!
//! ```text
//!   saved × (write + read × ahead)
//! + rate × ahead × (write + read × ahead / 2)
//!     >  prefix × (write − read) + prefix × read + tools × (write + read × ahead)
//! ```
//!
//! `saved`: the message's texts' tokens less their markers'; `rate`: the
//! tokens the texts over the threshold so far (this message's included)
//! would save, per request so far (over at least [`AHEAD`] requests);
//! `prefix`: the tokens before the message (the client's tools, system
//! prompt and earlier messages), written again instead of read, then read
//! once more by a retrieval round (as the client sent them: an upper bound,
//! as the earlier texts go too); `tools`: Cairn's tools' own tokens, sent
//! from then on; `ahead`: [`AHEAD`]; `read`/`write` the model's cache
//! prices (no cache: both the input price). Every figure comes from the
//! bytes up to the message ([`BYTES_PER_TOKEN`]), so the decision depends
//! only on the conversation up to that message: the next request, which
//! carries the same history, decides the same, and the prefix stays
//! byte-stable.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::exchanges::cost::Caching;
use crate::domain::compress::Candidate;
use crate::domain::ledger::pricing::Price;

/// Bytes of JSON per token in the estimates (the figures need only be
/// stable and of the right size: they are never billed).
pub const BYTES_PER_TOKEN: usize = 4;

/// The requests within which a first offload must pay for itself.
pub const AHEAD: u64 = 10;

/// The decision on a conversation's first offload, and its figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FirstOffload {
    /// The first message whose texts pay for the break: every text over the
    /// threshold is offloaded, before it too; null when no message's texts
    /// pay and the request goes up as the client sent it.
    pub from_message: Option<usize>,
    /// Messages weighed before it whose texts did not pay on their own
    /// (every message weighed when none pays).
    pub kept_messages: usize,
    /// For the message offloaded from (else the last one weighed): tokens
    /// its texts save, less their markers'.
    pub saved_tokens: u64,
    /// Tokens per request the texts over the threshold so far would save.
    pub rate_tokens: u64,
    /// Tokens before it, written to the cache again.
    pub prefix_tokens: u64,
    /// Tokens of Cairn's tools.
    pub tools_tokens: u64,
    /// Requests ahead the saving is counted over.
    pub requests_ahead: u64,
    /// USD the break costs (writes instead of reads, the tools, a retrieval round).
    pub cost_usd: f64,
    /// USD the offload saves over the requests ahead.
    pub saving_usd: f64,
}

/// What the weighing needs besides the candidates.
pub struct Envelope<'a> {
    /// The request's messages as the client sent them.
    pub messages: &'a [Value],
    /// Bytes of the client's tools and system prompt (cached before any message).
    pub envelope_bytes: usize,
    /// Bytes of the tools Cairn would add.
    pub tools_bytes: usize,
    /// Characters a marker takes at most.
    pub marker_chars: usize,
    /// The request's caching.
    pub caching: Caching,
}

/// Weighs the candidates (in message order) as the module says.
pub fn weigh(candidates: &[Candidate], envelope: &Envelope<'_>, price: &Price) -> FirstOffload {
    let (read, write) = if envelope.caching.caches() {
        (
            price.cache_read_per_mtok,
            envelope.caching.write_rate(price),
        )
    } else {
        (price.input_per_mtok, price.input_per_mtok)
    };
    let tools = tokens(envelope.tools_bytes);
    let mut prefix_bytes = envelope.envelope_bytes;
    let mut assistants = 0;
    let mut weighed_to = 0;
    let mut kept = 0;
    let mut seen_chars = 0;
    let mut last = None;
    let mut at = 0;
    while at < candidates.len() {
        let message = candidates[at].message;
        let group = candidates[at..]
            .iter()
            .take_while(|c| c.message == message)
            .count();
        for m in envelope
            .messages
            .get(weighed_to..message)
            .unwrap_or_default()
        {
            prefix_bytes += json_bytes(m);
            assistants += u64::from(m["role"] == "assistant");
        }
        weighed_to = message.max(weighed_to);
        let saved_chars: usize = candidates[at..at + group]
            .iter()
            .map(|c| c.chars.saturating_sub(envelope.marker_chars))
            .sum();
        seen_chars += saved_chars;
        let saved = tokens(saved_chars);
        let rate = tokens(seen_chars) / assistants.max(AHEAD);
        let prefix = tokens(prefix_bytes);
        let ahead = AHEAD as f64;
        let cost_usd = (prefix as f64 * ((write - read).max(0.0) + read)
            + tools as f64 * (write + read * ahead))
            / 1e6;
        let saving_usd = (saved as f64 * (write + read * ahead)
            + rate as f64 * ahead * (write + read * ahead / 2.0))
            / 1e6;
        let decision = FirstOffload {
            from_message: (saving_usd > cost_usd).then_some(message),
            kept_messages: kept,
            saved_tokens: saved,
            rate_tokens: rate,
            prefix_tokens: prefix,
            tools_tokens: tools,
            requests_ahead: AHEAD,
            cost_usd,
            saving_usd,
        };
        if decision.from_message.is_some() {
            return decision;
        }
        kept += 1;
        last = Some(decision);
        at += group;
    }
    last.map_or(
        FirstOffload {
            from_message: None,
            kept_messages: 0,
            saved_tokens: 0,
            rate_tokens: 0,
            prefix_tokens: tokens(prefix_bytes),
            tools_tokens: tools,
            requests_ahead: 0,
            cost_usd: 0.0,
            saving_usd: 0.0,
        },
        |d| FirstOffload {
            kept_messages: kept,
            ..d
        },
    )
}

fn tokens(bytes: usize) -> u64 {
    (bytes / BYTES_PER_TOKEN) as u64
}

/// Bytes of `value` as compact JSON, without building them.
pub fn json_bytes(value: &Value) -> usize {
    let mut counted = Counted(0);
    // Writing to a counter cannot fail, nor can serializing a `Value`.
    let _ = serde_json::to_writer(&mut counted, value);
    counted.0
}

/// A writer that only counts.
struct Counted(usize);

impl std::io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::ledger::pricing::Pricing;
    use crate::domain::proxying::Provider;

    fn conversation(outputs: &[usize]) -> Vec<Value> {
        let mut messages = vec![json!({"role": "user", "content": "go"})];
        for (i, &n) in outputs.iter().enumerate() {
            messages.push(json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {}}]}));
            messages.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "x".repeat(n)}]}));
        }
        messages
    }

    fn candidates(outputs: &[usize]) -> Vec<Candidate> {
        outputs
            .iter()
            .enumerate()
            .map(|(i, &chars)| Candidate {
                message: 2 + 2 * i,
                chars,
            })
            .collect()
    }

    fn envelope(messages: &[Value], envelope_bytes: usize) -> Envelope<'_> {
        Envelope {
            messages,
            envelope_bytes,
            tools_bytes: 4_000,
            marker_chars: 1_100,
            caching: Caching::of(Provider::Anthropic, br#"{"cache_control":{}}"#),
        }
    }

    #[test]
    fn an_early_output_of_a_few_thousand_tokens_does_not_pay_for_the_break() {
        let sonnet = Pricing::default().price(Some("claude-sonnet-4-5"));
        // Claude Code's envelope (~88 KB) and a 9.5 KB output at its first turn.
        let messages = conversation(&[9_500]);
        let d = weigh(&candidates(&[9_500]), &envelope(&messages, 88_000), &sonnet);
        assert_eq!(d.from_message, None, "{d:?}");
        assert_eq!(d.kept_messages, 1);
        assert!(d.cost_usd > d.saving_usd, "{d:?}");
        assert!(
            d.prefix_tokens >= 22_000 && d.tools_tokens == 1_000,
            "{d:?}"
        );
    }

    #[test]
    fn a_large_output_pays_and_everything_after_it_goes_too() {
        let sonnet = Pricing::default().price(Some("claude-sonnet-4-5"));
        // A small output first (does not pay alone), then 120 KB (pays).
        let outputs = [9_500, 120_000, 8_000];
        let messages = conversation(&outputs);
        let d = weigh(&candidates(&outputs), &envelope(&messages, 88_000), &sonnet);
        assert_eq!(d.from_message, Some(4), "{d:?}");
        assert_eq!(d.kept_messages, 1);
        assert!(d.saving_usd > d.cost_usd, "{d:?}");
        // The prefix counts the kept output: the bytes before message 4.
        let before: usize = messages[..4].iter().map(json_bytes).sum();
        assert_eq!(
            d.prefix_tokens,
            ((88_000 + before) / BYTES_PER_TOKEN) as u64
        );
    }

    #[test]
    fn repeated_outputs_pay_once_the_conversation_has_brought_enough() {
        let sonnet = Pricing::default().price(Some("claude-sonnet-4-5"));
        // 15,000-character outputs, one a request, after a 50 KB envelope:
        // the first does not pay; the rate the conversation shows makes a
        // later one pay.
        let outputs = [15_000; 12];
        let messages = conversation(&outputs);
        let d = weigh(&candidates(&outputs), &envelope(&messages, 50_000), &sonnet);
        let from = d.from_message.unwrap_or_default();
        assert!(from > 2 && d.kept_messages > 0, "{d:?}");
        assert!(d.rate_tokens > 0 && d.saving_usd > d.cost_usd, "{d:?}");
        // Each message before it was weighed and did not pay.
        let earlier = weigh(
            &candidates(&outputs[..d.kept_messages]),
            &envelope(&messages[..from], 50_000),
            &sonnet,
        );
        assert_eq!(earlier.from_message, None, "{earlier:?}");
    }

    #[test]
    fn a_mid_size_output_late_in_a_long_conversation_does_not_pay() {
        let sonnet = Pricing::default().price(Some("claude-sonnet-4-5"));
        // Twenty outputs under the threshold, then one of 25,000 characters:
        // the prefix it would break has grown past what it saves in ten requests.
        let mut outputs = vec![5_000; 20];
        outputs.push(25_000);
        let messages = conversation(&outputs);
        let late = [Candidate {
            message: 2 + 2 * 20,
            chars: 25_000,
        }];
        let d = weigh(&late, &envelope(&messages, 88_000), &sonnet);
        assert_eq!(d.from_message, None, "{d:?}");
        assert!(
            d.prefix_tokens > 40_000 && d.requests_ahead == AHEAD,
            "{d:?}"
        );
    }

    #[test]
    fn the_decision_depends_only_on_the_history_before_the_message() {
        let sonnet = Pricing::default().price(Some("claude-sonnet-4-5"));
        let early = [9_500, 120_000];
        let later = [9_500, 120_000, 50_000, 7_000];
        let (a, b) = (conversation(&early), conversation(&later));
        let first = weigh(&candidates(&early), &envelope(&a, 88_000), &sonnet);
        let next = weigh(&candidates(&later), &envelope(&b, 88_000), &sonnet);
        assert_eq!(first, next);
    }

    #[test]
    fn without_a_cache_to_break_the_tools_and_a_round_are_the_cost() {
        let sonnet = Pricing::default().price(Some("claude-sonnet-4-5"));
        let messages = conversation(&[9_500]);
        let plain = Envelope {
            caching: Caching::of(Provider::Anthropic, b"{}"),
            ..envelope(&messages, 4_000)
        };
        let d = weigh(&candidates(&[9_500]), &plain, &sonnet);
        assert_eq!(d.from_message, Some(2), "{d:?}");
        // OpenAI (no write premium) on the same 88 KB envelope: still too early.
        let gpt = Pricing::default().price(Some("gpt-5"));
        let openai = Envelope {
            caching: Caching::OpenAi,
            ..envelope(&messages, 88_000)
        };
        assert_eq!(
            weigh(&candidates(&[9_500]), &openai, &gpt).from_message,
            None
        );
    }

    #[test]
    fn json_bytes_is_the_compact_length() {
        let v = json!({"a": [1, "x\"y", null], "b": {"c": true}});
        assert_eq!(
            json_bytes(&v),
            serde_json::to_vec(&v).map(|b| b.len()).unwrap_or(0)
        );
    }
}
