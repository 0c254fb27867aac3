//! Anthropic Messages: `tools[].input_schema`, `tool_use` content blocks,
//! `tool_result` blocks in the next user turn; thinking blocks shown with
//! their signatures.

use serde_json::{Value, json};

use super::{
    Conversation, ROUND_LIMIT_NOTE, ToolCall, ToolResult, WireApi, append, count, is_ours, prepend,
    take_messages, text,
};
use crate::domain::DomainError;
use crate::domain::compress::format::Format;
use crate::domain::proxying::usage::Usage;

mod stream;

/// `POST /v1/messages`.
pub struct Messages;

impl WireApi for Messages {
    fn take_conversation(&self, body: &mut Value) -> Result<Option<Conversation>, DomainError> {
        take_messages(body, Format::Anthropic, true)
    }

    fn opening<'a>(&self, body: &'a Value) -> &'a Value {
        &body["system"]
    }

    /// `input_tokens` leaves out the cache's reads and writes.
    fn usage(&self, usage: &serde_json::Map<String, Value>) -> Usage {
        let read = count(usage, "cache_read_input_tokens");
        let write = count(usage, "cache_creation_input_tokens");
        Usage {
            input: count(usage, "input_tokens") + read + write,
            output: count(usage, "output_tokens"),
            cache_read: read,
            cache_write: write,
        }
    }

    fn tool(&self, name: &str, description: &str, parameters: &Value) -> Value {
        json!({"name": name, "description": description, "input_schema": parameters})
    }

    fn calls(&self, answer: &Value) -> Vec<ToolCall> {
        answer["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| ToolCall {
                id: text(&b["id"]),
                name: text(&b["name"]),
                arguments: b["input"].clone(),
            })
            .collect()
    }

    fn continue_with(&self, body: &mut Value, answer: &Value, results: &[ToolResult]) {
        let ours = |id: &str| results.iter().any(|r| r.call.id == id);
        let blocks: Vec<Value> = answer["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] != "tool_use" || ours(b["id"].as_str().unwrap_or("")))
            .cloned()
            .collect();
        let answers: Vec<Value> = results
            .iter()
            .map(|r| {
                json!({"type": "tool_result", "tool_use_id": r.call.id,
                    "content": r.content, "is_error": r.is_error})
            })
            .collect();
        append(
            body,
            "messages",
            vec![
                json!({"role": "assistant", "content": blocks}),
                json!({"role": "user", "content": answers}),
            ],
        );
    }

    fn strip_calls(&self, answer: &mut Value, ours: &[&str]) {
        if let Some(Value::Array(blocks)) = answer.get_mut("content") {
            blocks.retain(|b| !(b["type"] == "tool_use" && is_ours(&b["name"], ours)));
            if !blocks.iter().any(|b| b["type"] == "tool_use") {
                if blocks.is_empty() {
                    blocks.push(json!({"type": "text", "text": ROUND_LIMIT_NOTE}));
                }
                answer["stop_reason"] = json!("end_turn");
            }
        }
    }

    fn keep_shown(&self, answer: &Value, shown: &mut Vec<Value>) {
        let blocks = answer["content"].as_array().into_iter().flatten();
        shown.extend(blocks.take_while(|b| b["type"] != "tool_use").cloned());
    }

    fn prepend_shown(&self, shown: Vec<Value>, answer: &mut Value) {
        prepend(answer, "content", shown);
    }
}
