//! OpenAI Responses: flat `tools`, `output` items (`function_call`,
//! `custom_tool_call`, `reasoning`, `message`), `function_call_output`
//! input items, and a `tools` echo in every response object.

use serde_json::{Value, json};

use super::{
    Conversation, ToolCall, ToolResult, WireApi, append, check, is_ours, openai_usage,
    parsed_arguments, prepend, text,
};
use crate::domain::DomainError;
use crate::domain::compress::format::Format;
use crate::domain::proxying::first_offload::json_bytes;
use crate::domain::proxying::usage::Usage;

pub mod items;
mod stream;

/// `POST /v1/responses`.
pub struct Responses;

/// Output items that call a tool the client runs, each of which the next
/// request must answer with its output item. (Hosted tools' items —
/// `web_search_call`, `file_search_call`, … — carry their own results.)
const CLIENT_CALLS: [&str; 6] = [
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "shell_call",
    "apply_patch_call",
    "computer_call",
];

/// Items that call a tool the client runs.
fn is_call(item: &Value) -> bool {
    item["type"]
        .as_str()
        .is_some_and(|t| CLIENT_CALLS.contains(&t))
}

impl WireApi for Responses {
    /// The `input` items seen as chat messages ([`items`]), the
    /// `instructions` as their system message.
    fn take_conversation(&self, body: &mut Value) -> Result<Option<Conversation>, DomainError> {
        let Some(Value::Array(input)) = body.get("input") else {
            return Ok(None);
        };
        let mut mapped = items::map(input);
        if let Some(instructions) = body["instructions"].as_str() {
            mapped.prepend_system(instructions);
        }
        check(Format::OpenAi, &mapped.messages, None)?;
        Ok(Some(Conversation {
            format: Format::OpenAi,
            messages: std::mem::take(&mut mapped.messages),
            system: None,
            items: Some(mapped),
        }))
    }

    /// The texts' edits written back into the `input` items.
    fn put_back(&self, body: &mut Value, conversation: Conversation) {
        if let (Some(mapped), Some(Value::Array(input))) =
            (conversation.items, body.get_mut("input"))
        {
            mapped.write_back(&conversation.messages, input);
        }
    }

    /// The `input` items stay in the body (they are edited in place) and
    /// the `instructions` are the conversation's first message: neither is
    /// the envelope.
    fn envelope_bytes(&self, body: &Value) -> usize {
        json_bytes(body)
            .saturating_sub(json_bytes(&body["input"]))
            .saturating_sub(json_bytes(&body["instructions"]))
    }

    fn conversation_key(&self) -> &'static str {
        "input"
    }

    fn opening<'a>(&self, body: &'a Value) -> &'a Value {
        &body["instructions"]
    }

    fn usage(&self, usage: &serde_json::Map<String, Value>) -> Usage {
        openai_usage(
            usage,
            ["input_tokens", "output_tokens", "input_tokens_details"],
        )
    }

    fn tool(&self, name: &str, description: &str, parameters: &Value) -> Value {
        json!({"type": "function", "name": name,
            "description": description, "parameters": parameters, "strict": false})
    }

    fn calls(&self, answer: &Value) -> Vec<ToolCall> {
        answer["output"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["type"] == "function_call")
            .map(|c| ToolCall {
                id: text(&c["call_id"]),
                name: text(&c["name"]),
                arguments: parsed_arguments(&c["arguments"]),
            })
            .collect()
    }

    fn continue_with(&self, body: &mut Value, answer: &Value, results: &[ToolResult]) {
        let ours = |id: &str| results.iter().any(|r| r.call.id == id);
        if let Some(text) = body["input"].as_str() {
            body["input"] = json!([{"role": "user", "content": text}]);
        }
        let mut turn: Vec<Value> = answer["output"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| !is_call(i) || ours(i["call_id"].as_str().unwrap_or("")))
            .cloned()
            .collect();
        turn.extend(results.iter().map(
            |r| json!({"type": "function_call_output", "call_id": r.call.id, "output": r.content}),
        ));
        append(body, "input", turn);
    }

    fn strip_calls(&self, answer: &mut Value, ours: &[&str]) {
        if let Some(Value::Array(items)) = answer.get_mut("output") {
            items.retain(|i| !(i["type"] == "function_call" && is_ours(&i["name"], ours)));
        }
    }

    fn keep_shown(&self, answer: &Value, shown: &mut Vec<Value>) {
        let items: Vec<&Value> = answer["output"]
            .as_array()
            .into_iter()
            .flatten()
            .take_while(|i| !is_call(i))
            .collect();
        let before_call = items.len();
        for (k, item) in items.into_iter().enumerate() {
            // A reasoning item goes back to the provider only with the item
            // that followed it: here a call the client never sees.
            if k + 1 == before_call && item["type"] == "reasoning" {
                continue;
            }
            shown.push(item.clone());
        }
    }

    fn prepend_shown(&self, shown: Vec<Value>, answer: &mut Value) {
        prepend(answer, "output", shown);
    }

    fn strip_tool_echo(&self, answer: &mut Value, ours: &[&str]) {
        if let Some(Value::Array(tools)) = answer.get_mut("tools") {
            tools.retain(|t| !is_ours(&t["name"], ours));
        }
    }
}
