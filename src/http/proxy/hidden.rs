//! What the client sees of the rounds Cairn resolved itself, the same in a
//! JSON answer as in a stream: everything a hidden round said before its
//! first tool call (text, thinking, reasoning items), except an OpenAI
//! reasoning item that stood right before that call — the provider accepts a
//! reasoning item back only with the item that followed it, and that item
//! was a call the client never sees. Chat completions join the rounds'
//! texts with a blank line. Cairn's tool definitions are never echoed.

use serde_json::{Value, json};

use crate::domain::proxying::Endpoint;

/// The separator between the texts of two rounds in one chat message.
pub const ROUND_SEPARATOR: &str = "\n\n";

/// The visible part of a hidden round's answer: chat texts, Messages blocks
/// or Responses output items, in order.
#[derive(Default)]
pub struct Shown(Vec<Value>);

impl Shown {
    /// Keeps what a hidden round's answer shows the client.
    pub fn keep(&mut self, endpoint: Endpoint, answer: &Value) {
        match endpoint {
            Endpoint::Chat => {
                if let Some(text) = answer["choices"][0]["message"]["content"]
                    .as_str()
                    .filter(|t| !t.is_empty())
                {
                    self.0.push(json!(text));
                }
            }
            Endpoint::Messages => {
                let blocks = answer["content"].as_array().into_iter().flatten();
                self.0
                    .extend(blocks.take_while(|b| b["type"] != "tool_use").cloned());
            }
            Endpoint::Responses => {
                let items: Vec<&Value> = answer["output"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .take_while(|i| {
                        !matches!(
                            i["type"].as_str(),
                            Some("function_call" | "custom_tool_call")
                        )
                    })
                    .collect();
                let before_call = items.len();
                for (k, item) in items.into_iter().enumerate() {
                    if k + 1 == before_call && item["type"] == "reasoning" {
                        continue;
                    }
                    self.0.push(item.clone());
                }
            }
        }
    }

    /// Puts what the hidden rounds showed in front of the final answer.
    pub fn prepend_to(self, endpoint: Endpoint, answer: &mut Value) {
        if self.0.is_empty() {
            return;
        }
        match endpoint {
            Endpoint::Chat => {
                let message = &mut answer["choices"][0]["message"];
                let mut texts: Vec<String> = self
                    .0
                    .iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect();
                if let Some(last) = message["content"].as_str().filter(|t| !t.is_empty()) {
                    texts.push(last.to_owned());
                }
                message["content"] = json!(texts.join(ROUND_SEPARATOR));
            }
            Endpoint::Messages => prepend(answer, "content", self.0),
            Endpoint::Responses => prepend(answer, "output", self.0),
        }
    }
}

fn prepend(answer: &mut Value, key: &str, mut shown: Vec<Value>) {
    if let Some(Value::Array(list)) = answer.get_mut(key) {
        shown.append(list);
        *list = shown;
    }
}

/// Removes Cairn's tools from a Responses object's `tools` echo.
pub fn strip_tool_echo(response: &mut Value, ours: &[&str]) {
    if let Some(Value::Array(tools)) = response.get_mut("tools") {
        tools.retain(|t| !ours.iter().any(|o| t["name"] == *o));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reasoning_item_before_a_hidden_call_is_not_shown() {
        let round = json!({"output": [
            {"type": "reasoning", "id": "rs_1"},
            {"type": "function_call", "name": "memory_fetch", "call_id": "c1"}]});
        let with_preamble = json!({"output": [
            {"type": "reasoning", "id": "rs_2"},
            {"type": "message", "id": "msg_2"},
            {"type": "function_call", "name": "memory_fetch", "call_id": "c2"}]});
        let mut shown = Shown::default();
        shown.keep(Endpoint::Responses, &round);
        shown.keep(Endpoint::Responses, &with_preamble);
        let mut last = json!({"output": [{"type": "message", "id": "msg_3"}]});
        shown.prepend_to(Endpoint::Responses, &mut last);
        let ids: Vec<&str> = last["output"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["rs_2", "msg_2", "msg_3"]);
    }

    #[test]
    fn chat_rounds_are_joined_by_a_blank_line() {
        let mut shown = Shown::default();
        shown.keep(
            Endpoint::Chat,
            &json!({"choices": [{"message": {"content": "Looking."}}]}),
        );
        let mut last = json!({"choices": [{"message": {"content": "Found it."}}]});
        shown.prepend_to(Endpoint::Chat, &mut last);
        assert_eq!(
            last["choices"][0]["message"]["content"],
            "Looking.\n\nFound it."
        );
    }
}
