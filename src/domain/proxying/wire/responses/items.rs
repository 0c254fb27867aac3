//! The Responses API's `input` items seen as chat messages, so the same
//! compression runs on them, and its text edits written back into the items.
//!
//! Messages map to messages (text parts to `text` parts), consecutive
//! `function_call` (and freeform `custom_tool_call`) items to one assistant
//! message with `tool_calls`, and their outputs to `tool` messages. An output whose call is
//! not in `input` (a conversation continued with `previous_response_id`) gets
//! a stand-in call so the pairs stay valid. Other items (reasoning, references,
//! built-in tool calls) are left out and never edited.

use serde_json::{Value, json};

/// Chat messages standing for a Responses `input`, and where each text came from.
pub struct Mapped {
    /// The messages.
    pub messages: Vec<Value>,
    /// For each message, the input item and the JSON paths (inside the item)
    /// of its texts, in the order the message holds them; `None` for stand-ins.
    origins: Vec<Option<(usize, Vec<Vec<String>>)>>,
}

/// Maps `input` (an array of items) to chat messages.
pub fn map(items: &[Value]) -> Mapped {
    let mut mapped = Mapped {
        messages: Vec::new(),
        origins: Vec::new(),
    };
    let mut open_calls: Vec<String> = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let item = &items[i];
        match item_type(item) {
            "function_call" | "custom_tool_call" => {
                let mut calls = Vec::new();
                while i < items.len()
                    && matches!(item_type(&items[i]), "function_call" | "custom_tool_call")
                {
                    let call = &items[i];
                    let id = call["call_id"].as_str().unwrap_or("").to_owned();
                    open_calls.push(id.clone());
                    let arguments = call["arguments"].as_str().or(call["input"].as_str());
                    calls.push(json!({"id": id, "type": "function", "function": {
                        "name": call["name"].as_str().unwrap_or("tool"),
                        "arguments": arguments.unwrap_or(""),
                    }}));
                    i += 1;
                }
                mapped.push(
                    json!({"role": "assistant", "content": null, "tool_calls": calls}),
                    None,
                );
                continue;
            }
            "function_call_output" | "custom_tool_call_output" => {
                let id = item["call_id"].as_str().unwrap_or("").to_owned();
                if !open_calls.contains(&id) {
                    mapped.push(
                        json!({"role": "assistant", "content": null, "tool_calls": [
                            {"id": id, "type": "function", "function": {"name": "tool", "arguments": ""}}
                        ]}),
                        None,
                    );
                }
                open_calls.retain(|c| *c != id);
                let (content, paths) = content_of(&item["output"], "output");
                mapped.push(
                    json!({"role": "tool", "tool_call_id": id, "content": content}),
                    Some((i, paths)),
                );
            }
            "message" => {
                let role = item["role"]
                    .as_str()
                    .filter(|r| matches!(*r, "user" | "assistant" | "system" | "developer"))
                    .unwrap_or("user");
                let (content, paths) = content_of(&item["content"], "content");
                if role == "assistant" && content.is_null() {
                    i += 1;
                    continue;
                }
                mapped.push(json!({"role": role, "content": content}), Some((i, paths)));
            }
            _ => {}
        }
        i += 1;
    }
    mapped
}

impl Mapped {
    /// Puts the Responses `instructions` first, as a system message (counted, never edited).
    pub fn prepend_system(&mut self, instructions: &str) {
        self.messages
            .insert(0, json!({"role": "system", "content": instructions}));
        self.origins.insert(0, None);
    }

    fn push(&mut self, message: Value, origin: Option<(usize, Vec<Vec<String>>)>) {
        self.messages.push(message);
        self.origins.push(origin);
    }

    /// Writes the texts of `edited` (the mapped messages after compression,
    /// one for one) back into `items`.
    pub fn write_back(&self, edited: &[Value], items: &mut [Value]) {
        for (message, origin) in edited.iter().zip(&self.origins) {
            let Some((index, paths)) = origin else {
                continue;
            };
            let texts = texts_of(&message["content"]);
            for (path, text) in paths.iter().zip(texts) {
                if let Some(slot) = pointer_mut(&mut items[*index], path) {
                    *slot = Value::String(text.to_owned());
                }
            }
        }
    }
}

/// A typed item's type; an item without one but with a role is a message.
fn item_type(item: &Value) -> &str {
    match item["type"].as_str() {
        Some(kind) => kind,
        None if item.get("role").is_some() => "message",
        None => "",
    }
}

/// A message's or output's content as chat content, with the paths of its texts.
fn content_of(content: &Value, field: &str) -> (Value, Vec<Vec<String>>) {
    match content {
        Value::String(text) => (Value::String(text.clone()), vec![vec![field.to_owned()]]),
        Value::Array(parts) => {
            let mut paths = Vec::new();
            let parts = parts
                .iter()
                .enumerate()
                .map(|(k, part)| match part["text"].as_str() {
                    Some(text) => {
                        paths.push(vec![field.to_owned(), k.to_string(), "text".to_owned()]);
                        json!({"type": "text", "text": text})
                    }
                    None => json!({"type": "image_url", "image_url": {"url": ""}}),
                })
                .collect();
            (Value::Array(parts), paths)
        }
        _ => (Value::Null, Vec::new()),
    }
}

/// The texts of chat content, in order.
fn texts_of(content: &Value) -> Vec<&str> {
    match content {
        Value::String(text) => vec![text.as_str()],
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect(),
        _ => Vec::new(),
    }
}

fn pointer_mut<'a>(mut value: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    for key in path {
        value = match value {
            Value::Array(items) => items.get_mut(key.parse::<usize>().ok()?)?,
            Value::Object(map) => map.get_mut(key)?,
            _ => return None,
        };
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_map_to_paired_messages_and_edits_go_back() {
        let mut items = vec![
            json!({"role": "user", "content": "hi"}),
            json!({"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}),
            json!({"type": "function_call", "call_id": "c2", "name": "cat", "arguments": "{}"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "a\nb"}),
            json!({"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "x"}]}),
            json!({"type": "function_call_output", "call_id": "old", "output": "orphan"}),
            json!({"type": "reasoning", "summary": []}),
            json!({"type": "custom_tool_call", "call_id": "c3", "name": "exec", "input": "ls"}),
            json!({"type": "custom_tool_call_output", "call_id": "c3", "output": [{"type": "input_text", "text": "y"}]}),
        ];
        let mapped = map(&items);
        let roles: Vec<&str> = mapped
            .messages
            .iter()
            .map(|m| m["role"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            roles,
            [
                "user",
                "assistant",
                "tool",
                "tool",
                "assistant",
                "tool",
                "assistant",
                "tool"
            ]
        );
        assert_eq!(
            mapped.messages[6]["tool_calls"][0]["function"]["arguments"],
            "ls"
        );
        assert_eq!(
            mapped.messages[1]["tool_calls"][1]["function"]["name"],
            "cat"
        );
        let mut edited = mapped.messages.clone();
        edited[2]["content"] = json!("A");
        edited[3]["content"][0]["text"] = json!("X");
        edited[5]["content"] = json!("O");
        edited[7]["content"][0]["text"] = json!("Y");
        mapped.write_back(&edited, &mut items);
        assert_eq!(items[3]["output"], "A");
        assert_eq!(
            items[4]["output"][0],
            json!({"type": "input_text", "text": "X"})
        );
        assert_eq!(items[5]["output"], "O");
        assert_eq!(items[8]["output"][0]["text"], "Y");
        assert_eq!(items[0]["content"], "hi");
    }
}
