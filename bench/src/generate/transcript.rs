//! The compress benchmark's agent transcript (100 OpenAI messages, 32 tool
//! results of 18 KiB of log-like text, about 200k o200k tokens), shared by
//! the compress measure and the proxy benchmark.

use serde_json::{Value, json};

use super::TextGenerator;

/// Messages in the transcript.
pub const MESSAGES: usize = 100;
/// Tool calls in it (each with its result): 2 × 32 of the 100 messages.
const TOOL_CALLS: usize = 32;
/// Bytes of each tool result: this log-like text runs ~2.9 bytes a token,
/// so the transcript comes to about 200k o200k tokens.
const RESULT_BYTES: usize = 18 << 10;

/// The transcript: a system prompt, a task, 32 tool calls with ~24 KiB
/// results of log-like text, and short assistant/user chatter in between.
pub fn transcript(seed: u64) -> Vec<Value> {
    let mut text = TextGenerator::new(seed);
    let mut messages = vec![
        json!({"role": "system", "content": "You are a coding agent. Use the tools; keep answers short."}),
        json!({"role": "user", "content": "The nightly build is red: find out why and fix it."}),
    ];
    let mut call = 0;
    while messages.len() < MESSAGES {
        if call < TOOL_CALLS && messages.len() + 2 <= MESSAGES {
            call += 1;
            let id = format!("call_{call:03}");
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "run", "arguments": format!("{{\"step\": {call}}}")}}]}));
            let mut out = Vec::with_capacity(RESULT_BYTES + 256);
            text.fill(&mut out, RESULT_BYTES);
            messages.push(json!({"role": "tool", "tool_call_id": id,
                "content": String::from_utf8_lossy(&out).into_owned()}));
        }
        if messages.len() < MESSAGES {
            let mut line = Vec::new();
            text.push_line(&mut line);
            let role = if messages.len() % 2 == 0 {
                "assistant"
            } else {
                "user"
            };
            messages.push(
                json!({"role": role, "content": String::from_utf8_lossy(&line).trim().to_owned()}),
            );
        }
    }
    messages
}
