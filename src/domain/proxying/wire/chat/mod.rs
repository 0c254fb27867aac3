//! OpenAI chat completions: `tools[].function`, `choices[0].message`
//! `tool_calls`, `tool` messages; hidden rounds' texts joined into the
//! final message's content.

use serde_json::{Value, json};

use super::{
    Conversation, ROUND_LIMIT_NOTE, ROUND_SEPARATOR, ToolCall, ToolResult, WireApi, append,
    is_ours, openai_usage, parsed_arguments, take_messages, text,
};
use crate::domain::DomainError;
use crate::domain::compress::format::Format;
use crate::domain::proxying::usage::Usage;

mod stream;

/// `POST /v1/chat/completions`.
pub struct Chat;

impl WireApi for Chat {
    fn take_conversation(&self, body: &mut Value) -> Result<Option<Conversation>, DomainError> {
        take_messages(body, Format::OpenAi, false)
    }

    fn usage(&self, usage: &serde_json::Map<String, Value>) -> Usage {
        openai_usage(
            usage,
            [
                "prompt_tokens",
                "completion_tokens",
                "prompt_tokens_details",
            ],
        )
    }

    fn tool(&self, name: &str, description: &str, parameters: &Value) -> Value {
        json!({"type": "function", "function": {
            "name": name, "description": description, "parameters": parameters}})
    }

    fn calls(&self, answer: &Value) -> Vec<ToolCall> {
        answer["choices"][0]["message"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| ToolCall {
                id: text(&c["id"]),
                name: text(&c["function"]["name"]),
                arguments: parsed_arguments(&c["function"]["arguments"]),
            })
            .collect()
    }

    fn continue_with(&self, body: &mut Value, answer: &Value, results: &[ToolResult]) {
        let ours = |id: &str| results.iter().any(|r| r.call.id == id);
        let message = &answer["choices"][0]["message"];
        let calls: Vec<Value> = message["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| ours(c["id"].as_str().unwrap_or("")))
            .cloned()
            .collect();
        let mut turn =
            vec![json!({"role": "assistant", "content": message["content"], "tool_calls": calls})];
        turn.extend(
            results
                .iter()
                .map(|r| json!({"role": "tool", "tool_call_id": r.call.id, "content": r.content})),
        );
        append(body, "messages", turn);
    }

    fn strip_calls(&self, answer: &mut Value, ours: &[&str]) {
        let choice = &mut answer["choices"][0];
        if let Some(Value::Array(calls)) = choice["message"].get_mut("tool_calls") {
            calls.retain(|c| !is_ours(&c["function"]["name"], ours));
            if calls.is_empty() {
                if let Some(m) = choice["message"].as_object_mut() {
                    m.remove("tool_calls");
                }
                if choice["message"]["content"].is_null() {
                    choice["message"]["content"] = json!(ROUND_LIMIT_NOTE);
                }
                choice["finish_reason"] = json!("stop");
            }
        }
    }

    fn keep_shown(&self, answer: &Value, shown: &mut Vec<Value>) {
        if let Some(text) = answer["choices"][0]["message"]["content"]
            .as_str()
            .filter(|t| !t.is_empty())
        {
            shown.push(json!(text));
        }
    }

    fn prepend_shown(&self, shown: Vec<Value>, answer: &mut Value) {
        let message = &mut answer["choices"][0]["message"];
        let mut texts: Vec<String> = shown
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect();
        if let Some(last) = message["content"].as_str().filter(|t| !t.is_empty()) {
            texts.push(last.to_owned());
        }
        message["content"] = json!(texts.join(ROUND_SEPARATOR));
    }
}
