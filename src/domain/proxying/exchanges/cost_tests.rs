//! Tests of cost.rs: prices, the untouched request's model, profiles.
use serde_json::json;

use super::*;
use crate::domain::ledger::pricing::Pricing;

fn usage(input: u64, read: u64, write: u64, output: u64) -> Usage {
    Usage {
        input,
        output,
        cache_read: read,
        cache_write: write,
    }
}

#[test]
fn a_profile_shares_its_settings_and_leading_messages() {
    let earlier = json!({"model": "m", "messages": [{"a": 1}, {"b": 2}], "tools": [1]});
    let later = json!({"model": "m", "messages": [{"a": 1}, {"b": 2}, {"c": 3}], "tools": [1]});
    let (e, l) = (
        Profile::of(&earlier, "messages"),
        Profile::of(&later, "messages"),
    );
    assert_eq!(l.shared_with(&e), 1.0);
    assert!(e.shared_with(&l) < 1.0);
    let edited = json!({"model": "m", "messages": [{"a": 1}, {"b": 9}], "tools": [1]});
    let share = Profile::of(&edited, "messages").shared_with(&e);
    assert!(share > 0.0 && share < 1.0, "{share}");
    let other_tools = json!({"model": "m", "messages": [{"a": 1}, {"b": 2}], "tools": [2]});
    assert_eq!(Profile::of(&other_tools, "messages").shared_with(&e), 0.0);
    // A breakpoint moved to the newest message leaves the shared prefix alone.
    let marked = json!({"model": "m", "messages": [{"a": 1}, {"b": 2, "cache_control": {"type": "ephemeral"}}], "tools": [1]});
    let moved = json!({"model": "m", "messages": [{"a": 1}, {"b": 2}, {"c": 3, "cache_control": {"type": "ephemeral"}}], "tools": [1]});
    assert_eq!(
        Profile::of(&moved, "messages").shared_with(&Profile::of(&marked, "messages")),
        1.0
    );
    // Streaming or not, and the answer's length, are not part of the cached prefix.
    let streamed = json!({"model": "m", "stream": true, "max_tokens": 9,
        "messages": [{"a": 1}, {"b": 2}, {"c": 3}], "tools": [1]});
    assert_eq!(Profile::of(&streamed, "messages").shared_with(&e), 1.0);
}

#[test]
fn the_untouched_request_is_cached_by_each_providers_rules() {
    let price = Pricing::default().price(Some("claude-sonnet-4-5"));
    let claude = Caching::Anthropic {
        breakpoints: true,
        hour: false,
    };
    let previous = Previous {
        input: 10_000,
        shared: 1.0,
        age_ms: 1_000,
    };
    // Cairn sent 3,000 tokens of a request that was 12,000 untouched:
    // 10,000 of them read from the cache and 2,000 written.
    assert_eq!(untouched_input(3_000, 40_000, 10_000), 12_000);
    assert_eq!(untouched_input(3_000, 40_000, 0), 3_000);
    let c = counterfactual(
        claude,
        &price,
        usage(3_000, 0, 0, 50),
        12_000,
        50,
        Some(previous),
    );
    assert_eq!(
        (c.input, c.cache_read, c.cache_write),
        (12_000, 10_000, 2_000)
    );
    let expected = (10_000.0 * 0.3 + 2_000.0 * 3.75 + 50.0 * 15.0) / 1e6;
    assert!((c.usd - expected).abs() < 1e-12, "{}", c.usd);
    // Too old to be cached: all written again.
    let stale = Previous {
        age_ms: SHORT_TTL_MS + 1,
        ..previous
    };
    let c = counterfactual(
        claude,
        &price,
        usage(3_000, 0, 0, 50),
        12_000,
        50,
        Some(stale),
    );
    assert_eq!((c.cache_read, c.cache_write), (0, 12_000));
    // No breakpoints: nothing cached.
    let plain = Caching::of(Provider::Anthropic, br#"{"messages":[]}"#);
    let c = counterfactual(
        plain,
        &price,
        usage(3_000, 0, 0, 50),
        12_000,
        50,
        Some(previous),
    );
    assert_eq!((c.cache_read, c.cache_write), (0, 0));
    // OpenAI: reads in 128-token steps from 1,024 on, never a write.
    let gpt = Pricing::default().price(Some("gpt-5"));
    let half = Previous {
        shared: 0.2,
        ..previous
    };
    let c = counterfactual(
        Caching::OpenAi,
        &gpt,
        usage(3_000, 0, 0, 9),
        12_000,
        9,
        Some(half),
    );
    assert_eq!((c.cache_read, c.cache_write), (1_024 + 896, 0));
    let tiny = Previous {
        input: 1_000,
        ..previous
    };
    let c = counterfactual(
        Caching::OpenAi,
        &gpt,
        usage(3_000, 0, 0, 9),
        12_000,
        9,
        Some(tiny),
    );
    assert_eq!(c.cache_read, 0);
}

#[test]
fn an_untouched_request_costs_what_was_billed() {
    let price = Pricing::default().price(Some("claude-haiku-4-5"));
    let caching = Caching::of(
        Provider::Anthropic,
        br#"{"cache_control":{"type":"ephemeral"}}"#,
    );
    let body = json!({"messages": [{"content": [{"type": "text", "cache_control": {"type": "ephemeral"}}]}]});
    assert_eq!(Caching::of_value(Provider::Anthropic, &body), caching);
    let hour = json!({"system": [{"cache_control": {"type": "ephemeral", "ttl": "1h"}}]});
    assert_eq!(
        Caching::of_value(Provider::Anthropic, &hour),
        Caching::Anthropic {
            breakpoints: true,
            hour: true
        }
    );
    assert!(!Caching::of_value(Provider::Anthropic, &json!({})).caches());
    let first = usage(5_000, 4_000, 500, 20);
    let c = as_billed(caching, &price, first);
    assert_eq!(
        (c.input, c.cache_read, c.cache_write, c.output),
        (5_000, 4_000, 500, 20)
    );
    assert!((c.usd - price.cost_cached(5_000, 4_000, 500, 20)).abs() < 1e-12);
}
