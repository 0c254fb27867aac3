//! The governor's tier of each conversation, so that it only rises.
//!
//! A request's tier comes from its calibrated token count, and both move
//! between turns for reasons that are not the conversation shrinking: the
//! calibration learns from each answer's usage, an offload makes the request
//! smaller. A tier that fell would stop governing texts an earlier turn
//! governed, and the next rise would rewrite them again (a cache write each
//! time). So each conversation keeps the highest tier it reached.
//!
//! A conversation is known by the client's session (`X-Cairn-Thread`, Claude
//! Code's `x-claude-code-session-id`, Codex's `session-id`) together with what
//! opens it: the system prompt or instructions and the first message, which a
//! growing conversation sends again unchanged on every turn.

use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Endpoint;
use crate::domain::governor::Tier;

/// Conversations remembered at most (an entry is ~80 bytes).
const CONVERSATIONS: u64 = 100_000;
/// A conversation idle this long is forgotten.
const IDLE: Duration = Duration::from_secs(24 * 3600);

/// What a conversation reached: its highest tier, and whether the
/// governor's rewrite has been made (it then stays: see [`super::govern_cost`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Reached {
    tier: Tier,
    governed: bool,
}

/// The highest tier each conversation has reached, per namespace.
pub struct ConversationTiers {
    reached: moka::sync::Cache<(String, [u8; 32]), Reached>,
}

impl Default for ConversationTiers {
    fn default() -> Self {
        Self {
            reached: moka::sync::Cache::builder()
                .max_capacity(CONVERSATIONS)
                .time_to_idle(IDLE)
                .build(),
        }
    }
}

impl ConversationTiers {
    /// The tier to use for a request whose own count gives `now`: the
    /// highest of `now` and what the conversation reached before, remembered.
    /// Two requests of one conversation at once cannot lose a rise: the
    /// read and the write are one step under the key's lock.
    pub fn rise(&self, namespace: &str, conversation: [u8; 32], now: Tier) -> Tier {
        let key = (namespace.to_owned(), conversation);
        let reached = self.reached.entry(key).and_upsert_with(|before| {
            before.map_or(
                Reached {
                    tier: now,
                    governed: false,
                },
                |b| Reached {
                    tier: b.value().tier.max(now),
                    governed: b.value().governed,
                },
            )
        });
        reached.value().tier
    }

    /// True once the governor's rewrite was made in the conversation.
    pub fn governed(&self, namespace: &str, conversation: [u8; 32]) -> bool {
        self.reached
            .get(&(namespace.to_owned(), conversation))
            .is_some_and(|r| r.governed)
    }

    /// Remembers that the governor's rewrite was made in the conversation.
    pub fn mark_governed(&self, namespace: &str, conversation: [u8; 32]) {
        let key = (namespace.to_owned(), conversation);
        self.reached.entry(key).and_upsert_with(|before| Reached {
            tier: before.map_or(Tier::Normal, |b| b.value().tier),
            governed: true,
        });
    }
}

/// What identifies the conversation of a request `body` (read before any
/// rewrite): the client's session, if it names one, the endpoint, the system
/// prompt or instructions, and the first message or input item.
pub fn conversation_of(endpoint: Endpoint, body: &Value, session: Option<&str>) -> [u8; 32] {
    let wire = super::wire::of(endpoint);
    let opening = wire.opening(body);
    let first = match &body[wire.conversation_key()] {
        Value::Array(items) => items.first().unwrap_or(&Value::Null),
        other => other,
    };
    let mut hash = Sha256::new();
    for part in [
        session.unwrap_or_default(),
        endpoint.name(),
        &opening.to_string(),
        &first.to_string(),
    ] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    hash.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_conversations_tier_never_falls() {
        let tiers = ConversationTiers::default();
        let body = json!({"system": "s", "messages": [{"role": "user", "content": "hi"}]});
        let one = conversation_of(Endpoint::Messages, &body, None);
        assert_eq!(tiers.rise("ns", one, Tier::Warn), Tier::Warn);
        assert_eq!(tiers.rise("ns", one, Tier::Normal), Tier::Warn);
        assert_eq!(tiers.rise("ns", one, Tier::PointerOnly), Tier::PointerOnly);
        assert_eq!(tiers.rise("ns", one, Tier::Warn), Tier::PointerOnly);
        // Another namespace, session or opening is another conversation.
        assert_eq!(tiers.rise("other", one, Tier::Normal), Tier::Normal);
        let other = conversation_of(Endpoint::Messages, &body, Some("session-2"));
        assert_ne!(one, other);
        assert_eq!(tiers.rise("ns", other, Tier::Normal), Tier::Normal);
        // Governed once, governed for good; the tier stays as it was.
        assert!(!tiers.governed("ns", one));
        tiers.mark_governed("ns", one);
        assert!(tiers.governed("ns", one) && !tiers.governed("ns", other));
        assert_eq!(tiers.rise("ns", one, Tier::Normal), Tier::PointerOnly);
        assert!(tiers.governed("ns", one));
    }

    #[test]
    fn a_growing_conversation_keeps_its_identity() {
        let turn1 =
            json!({"instructions": "be brief", "input": [{"role": "user", "content": "a"}]});
        let turn2 = json!({"instructions": "be brief", "input": [
            {"role": "user", "content": "a"}, {"type": "function_call_output", "call_id": "c", "output": "x"}]});
        let started_elsewhere =
            json!({"instructions": "be brief", "input": [{"role": "user", "content": "b"}]});
        let id = |b: &Value| conversation_of(Endpoint::Responses, b, Some("s"));
        assert_eq!(id(&turn1), id(&turn2));
        assert_ne!(id(&turn1), id(&started_elsewhere));
    }
}
