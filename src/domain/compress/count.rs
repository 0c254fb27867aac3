//! Token counts of message lists, cached by content hash.
//!
//! PLACEHOLDERS: `count_messages` and `count_cached` stand in for the
//! `Counter` methods of the same names another branch adds to tokens.rs.

use std::sync::LazyLock;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::domain::tokens::Counter;

/// Texts shorter than this are counted directly: hashing them costs about as much.
const CACHE_MIN_BYTES: usize = 512;

static COUNTS: LazyLock<moka::sync::Cache<(String, [u8; 32]), u64>> =
    LazyLock::new(|| moka::sync::Cache::new(200_000));

// replaced by Counter::count_cached at merge
/// Tokens of `text`, remembered by its SHA-256 so a repeated text costs one hash.
pub fn count_cached(counter: &Counter, text: &str) -> u64 {
    if text.len() < CACHE_MIN_BYTES {
        return counter.count(text);
    }
    let key = (
        counter.method(),
        <[u8; 32]>::from(Sha256::digest(text.as_bytes())),
    );
    if let Some(count) = COUNTS.get(&key) {
        return count;
    }
    let count = counter.count(text);
    COUNTS.insert(key, count);
    count
}

// replaced by Counter::count_messages at merge
/// Tokens of a message list as the provider bills it: OpenAI's 3 per message,
/// 1 per `name` and 3 to prime the answer; Anthropic's blocks and system prompt.
pub fn count_messages(counter: &Counter, messages: &[Value], system: Option<&Value>) -> u64 {
    let mut total = system.map_or(0, |s| content_tokens(counter, s));
    for message in messages {
        if counter.is_exact() {
            total += 3;
            total += message["role"].as_str().map_or(0, |r| counter.count(r));
            if message.get("name").is_some() {
                total += 1;
            }
        }
        total += content_tokens(counter, &message["content"]);
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            total += count_cached(counter, call["function"]["name"].as_str().unwrap_or(""));
            total += count_cached(
                counter,
                call["function"]["arguments"].as_str().unwrap_or(""),
            );
        }
        if let Some(id) = message["tool_call_id"].as_str() {
            total += count_cached(counter, id);
        }
    }
    if counter.is_exact() && !messages.is_empty() {
        total += 3;
    }
    total
}

fn content_tokens(counter: &Counter, content: &Value) -> u64 {
    match content {
        Value::String(text) => count_cached(counter, text),
        Value::Array(blocks) => blocks
            .iter()
            .map(|block| match block["type"].as_str() {
                Some("tool_use") => {
                    count_cached(counter, block["name"].as_str().unwrap_or(""))
                        + count_cached(counter, &block["input"].to_string())
                }
                Some("tool_result") => content_tokens(counter, &block["content"]),
                _ => block["text"]
                    .as_str()
                    .map_or(0, |t| count_cached(counter, t)),
            })
            .sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn openai_lists_carry_the_per_message_overhead() {
        let counter = Counter::for_model(Some("gpt-4o"));
        let messages = [json!({"role": "user", "content": "hello world"})];
        // 3 per message + "user" (1) + "hello world" (2) + 3 priming.
        assert_eq!(count_messages(&counter, &messages, None), 9);
        let long = "word ".repeat(400);
        assert_eq!(count_cached(&counter, &long), counter.count(&long));
        assert_eq!(count_cached(&counter, &long), counter.count(&long));
    }
}
