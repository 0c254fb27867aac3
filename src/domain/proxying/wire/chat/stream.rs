//! Chat completions' stream: `chat.completion.chunk`s whose deltas build the
//! round's message (texts, `tool_calls` by index), the first round's id on
//! every chunk, hidden rounds' texts set apart by a blank line, and the
//! closing usage chunk and `[DONE]`.

use serde_json::{Value, json};

use super::Chat;
use crate::domain::DomainError;
use crate::domain::proxying::spliced::Spliced;
use crate::domain::proxying::sse::Event;
use crate::domain::proxying::wire::ROUND_SEPARATOR;
use crate::domain::proxying::wire::stream::{Filter, StreamApi, rewritten, set};

impl StreamApi for Chat {
    fn on_event(&self, f: &mut Filter, event: Event, data: Value) -> Vec<Event> {
        if f.chat_id.is_none() {
            f.chat_id = Some(data["id"].clone());
        }
        if let Some(model) = data["model"].as_str() {
            f.model = Some(model.to_owned());
        }
        if f.message.is_null() {
            f.message = json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": []}}]});
        }
        if data["usage"].is_object() {
            f.usage = data["usage"].clone();
        }
        let Some(choice) = data["choices"].get(0) else {
            return Vec::new(); // the usage chunk: written by `finish`
        };
        let delta = &choice["delta"];
        let message = &mut f.message["choices"][0]["message"];
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
            f.closing = Some((event, data));
            f.ended = true;
            return Vec::new();
        }
        let only_role = delta.get("content").is_none_or(Value::is_null) && calls.is_empty();
        if f.round > 0 && only_role {
            return Vec::new(); // the next round's opening chunk
        }
        let (mut event, mut data) = (event, data);
        if let Some(text) = data["choices"][0]["delta"]["content"]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            && !f.holding
        {
            if f.text_sent && !f.round_text_sent {
                data["choices"][0]["delta"]["content"] = json!(format!("{ROUND_SEPARATOR}{text}"));
                event = rewritten(&event, data.clone());
            }
            f.round_text_sent = true;
        }
        f.hold_or_pass(event, data, calls.is_empty())
    }

    fn event_index(&self, data: &Value) -> Option<u64> {
        data["choices"][0]["delta"]["tool_calls"][0]["index"].as_u64()
    }

    fn call_name<'a>(&self, data: &'a Value) -> &'a Value {
        &data["choices"][0]["delta"]["tool_calls"][0]["function"]["name"]
    }

    fn renumber(&self, f: &mut Filter, data: &mut Value) -> bool {
        let mut changed = false;
        if f.round > 0
            && let Some(id) = f.chat_id.clone()
        {
            changed |= set(data.get_mut("id"), id);
        }
        let calls = data
            .pointer_mut("/choices/0/delta/tool_calls")
            .and_then(Value::as_array_mut);
        for call in calls.into_iter().flatten() {
            if let Some(index) = call["index"].as_u64() {
                let mapped = f.client_index(index);
                changed |= set(call.get_mut("index"), json!(mapped));
            }
        }
        changed
    }

    fn error_event(&self, _f: &mut Filter, kind: &str, message: &str) -> Event {
        let data =
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}});
        Event::new(None, &data.to_string())
    }

    fn close(&self, f: &mut Filter, strip: bool, total: Value, out: &mut Vec<Event>) {
        if let Some((event, mut data)) = f.closing.take() {
            if strip {
                data["choices"][0]["finish_reason"] = json!("stop");
            }
            out.push(f.reissue(event, data, strip));
        }
        if f.wants_usage {
            let mut last =
                json!({"object": "chat.completion.chunk", "choices": [], "usage": total});
            if let Some(id) = &f.chat_id {
                last["id"] = id.clone();
            }
            if let Some(model) = &f.model {
                last["model"] = json!(model);
            }
            out.push(Event::new(None, &last.to_string()));
        }
        out.push(Event::new(None, "[DONE]"));
    }

    fn ask_usage(&self, body: &mut Spliced) -> Result<bool, DomainError> {
        let wants_usage = body.value()["stream_options"]["include_usage"] == Value::Bool(true);
        if !wants_usage {
            body.edit(|body| body["stream_options"]["include_usage"] = Value::Bool(true))
                .map_err(|e| DomainError::Internal(e.to_string()))?;
        }
        Ok(wants_usage)
    }

    fn indexes_per_round(&self) -> bool {
        true
    }
}
