//! The three APIs' stream events: how each builds the round's answer and
//! which events pass, wait or end the round.

use serde_json::{Value, json};

use super::super::sse::Event;
use super::filter::{Filter, rewritten};
use crate::domain::proxying::wire::ROUND_SEPARATOR;

impl Filter {
    pub(super) fn chat(&mut self, event: Event, data: Value) -> Vec<Event> {
        if self.chat_id.is_none() {
            self.chat_id = Some(data["id"].clone());
        }
        if let Some(model) = data["model"].as_str() {
            self.model = Some(model.to_owned());
        }
        if self.message.is_null() {
            self.message = json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": []}}]});
        }
        if data["usage"].is_object() {
            self.usage = data["usage"].clone();
        }
        let Some(choice) = data["choices"].get(0) else {
            return Vec::new(); // the usage chunk: written by `finish`
        };
        let delta = &choice["delta"];
        let message = &mut self.message["choices"][0]["message"];
        if let Some(text) = delta["content"].as_str() {
            let content = message["content"].as_str().unwrap_or("").to_owned() + text;
            message["content"] = json!(content);
        }
        let calls = delta["tool_calls"].as_array().cloned().unwrap_or_default();
        for call in &calls {
            let index = call["index"].as_u64().unwrap_or(0) as usize;
            let list = message["tool_calls"].as_array_mut();
            if let Some(list) = list {
                while list.len() <= index {
                    list.push(json!({"id": "", "type": "function", "function": {"name": "", "arguments": ""}}));
                }
                let slot = &mut list[index];
                for (field, target) in [
                    ("id", "/id"),
                    ("name", "/function/name"),
                    ("arguments", "/function/arguments"),
                ] {
                    let piece = if field == "id" {
                        &call["id"]
                    } else {
                        &call["function"][field]
                    };
                    if let (Some(piece), Some(target)) = (piece.as_str(), slot.pointer_mut(target))
                    {
                        *target = json!(target.as_str().unwrap_or("").to_owned() + piece);
                    }
                }
            }
        }
        if !choice["finish_reason"].is_null() {
            self.closing = Some((event, data));
            self.ended = true;
            return Vec::new();
        }
        let only_role = delta.get("content").is_none_or(Value::is_null) && calls.is_empty();
        if self.round > 0 && only_role {
            return Vec::new(); // the next round's opening chunk
        }
        let (mut event, mut data) = (event, data);
        if let Some(text) = data["choices"][0]["delta"]["content"]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            && !self.holding
        {
            if self.text_sent && !self.round_text_sent {
                data["choices"][0]["delta"]["content"] = json!(format!("{ROUND_SEPARATOR}{text}"));
                event = rewritten(&event, data.clone());
            }
            self.round_text_sent = true;
        }
        self.hold_or_pass(event, data, calls.is_empty())
    }

    pub(super) fn messages(&mut self, event: Event, data: Value) -> Vec<Event> {
        match data["type"].as_str().unwrap_or("") {
            "message_start" => {
                self.usage = data["message"]["usage"].clone();
                self.model = data["message"]["model"].as_str().map(str::to_owned);
                self.message = json!({"content": []});
                if self.round == 0 {
                    return vec![event];
                }
                Vec::new()
            }
            "content_block_start" => {
                if let Some(blocks) = self.message["content"].as_array_mut() {
                    blocks.push(data["content_block"].clone());
                }
                let pass = data["content_block"]["type"] != "tool_use";
                self.hold_or_pass(event, data, pass)
            }
            "content_block_delta" => {
                self.apply_delta(&data);
                self.hold_or_pass(event, data, true)
            }
            "content_block_stop" => {
                if let Some(block) = self.message["content"]
                    .as_array_mut()
                    .and_then(|b| b.last_mut())
                    && let Some(partial) = block.get("partial_json").and_then(Value::as_str)
                {
                    block["input"] = serde_json::from_str(partial).unwrap_or(json!({}));
                    if let Some(b) = block.as_object_mut() {
                        b.remove("partial_json");
                    }
                }
                self.hold_or_pass(event, data, true)
            }
            "message_delta" => {
                // Its counts are cumulative: they replace message_start's.
                if let (Some(counts), Some(u)) =
                    (data["usage"].as_object(), self.usage.as_object_mut())
                {
                    for (k, v) in counts.iter().filter(|(_, v)| !v.is_null()) {
                        u.insert(k.clone(), v.clone());
                    }
                }
                self.closing = Some((event, data));
                Vec::new()
            }
            "message_stop" => {
                self.ended = true;
                Vec::new()
            }
            _ => vec![event], // ping, error
        }
    }

    fn apply_delta(&mut self, data: &Value) {
        let index = data["index"].as_u64().unwrap_or(0) as usize;
        let Some(block) = self.message["content"].get_mut(index) else {
            return;
        };
        let delta = &data["delta"];
        let mut append = |field: &str, piece: &Value| {
            if let Some(piece) = piece.as_str() {
                let text = block[field].as_str().unwrap_or("").to_owned() + piece;
                block[field] = json!(text);
            }
        };
        match delta["type"].as_str().unwrap_or("") {
            "text_delta" => append("text", &delta["text"]),
            "input_json_delta" => append("partial_json", &delta["partial_json"]),
            "thinking_delta" => append("thinking", &delta["thinking"]),
            "signature_delta" => block["signature"] = delta["signature"].clone(),
            _ => {}
        }
    }

    pub(super) fn responses(&mut self, event: Event, data: Value) -> Vec<Event> {
        let kind = data["type"].as_str().unwrap_or("").to_owned();
        match kind.as_str() {
            "response.created" | "response.in_progress" => {
                if self.round == 0 {
                    return vec![self.reissue(event, data, false)];
                }
                Vec::new()
            }
            "response.completed" => {
                self.message = data["response"].clone();
                self.usage = data["response"]["usage"].clone();
                self.model = data["response"]["model"].as_str().map(str::to_owned);
                self.closing = Some((event, data));
                self.ended = true;
                Vec::new()
            }
            "response.output_item.added" => {
                let kind = data["item"]["type"].as_str().unwrap_or("").to_owned();
                let kind = kind.as_str();
                let is_call = matches!(kind, "function_call" | "custom_tool_call");
                let mut out = Vec::new();
                if self.tentative {
                    if is_call {
                        self.tentative = false;
                    } else {
                        out = self.release();
                    }
                }
                if kind == "reasoning" && !self.holding {
                    // Held until the next item shows whether it may be shown.
                    self.holding = true;
                    self.tentative = true;
                }
                out.extend(self.hold_or_pass(event, data, !is_call));
                out
            }
            _ => self.hold_or_pass(event, data, true),
        }
    }
}
