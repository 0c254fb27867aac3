//! Messages' stream: `message_start`, content blocks started, extended by
//! deltas (text, tool input JSON, thinking, signatures) and stopped, each
//! renumbered across rounds, and the final round's `message_delta` (with the
//! summed usage) and `message_stop`.

use serde_json::{Value, json};

use super::Messages;
use crate::domain::proxying::sse::Event;
use crate::domain::proxying::wire::stream::{Filter, StreamApi, set};

impl StreamApi for Messages {
    fn on_event(&self, f: &mut Filter, event: Event, data: Value) -> Vec<Event> {
        match data["type"].as_str().unwrap_or("") {
            "message_start" => {
                f.usage = data["message"]["usage"].clone();
                f.model = data["message"]["model"].as_str().map(str::to_owned);
                f.message = json!({"content": []});
                if f.round == 0 {
                    return vec![event];
                }
                Vec::new()
            }
            "content_block_start" => {
                if let Some(blocks) = f.message["content"].as_array_mut() {
                    blocks.push(data["content_block"].clone());
                }
                let pass = data["content_block"]["type"] != "tool_use";
                f.hold_or_pass(event, data, pass)
            }
            "content_block_delta" => {
                apply_delta(f, &data);
                f.hold_or_pass(event, data, true)
            }
            "content_block_stop" => {
                if let Some(block) = f.message["content"]
                    .as_array_mut()
                    .and_then(|b| b.last_mut())
                    && let Some(partial) = block.get("partial_json").and_then(Value::as_str)
                {
                    block["input"] = serde_json::from_str(partial).unwrap_or(json!({}));
                    if let Some(b) = block.as_object_mut() {
                        b.remove("partial_json");
                    }
                }
                f.hold_or_pass(event, data, true)
            }
            "message_delta" => {
                // Its counts are cumulative: they replace message_start's.
                if let (Some(counts), Some(u)) =
                    (data["usage"].as_object(), f.usage.as_object_mut())
                {
                    for (k, v) in counts.iter().filter(|(_, v)| !v.is_null()) {
                        u.insert(k.clone(), v.clone());
                    }
                }
                f.closing = Some((event, data));
                Vec::new()
            }
            "message_stop" => {
                f.ended = true;
                Vec::new()
            }
            _ => vec![event], // ping, error
        }
    }

    fn event_index(&self, data: &Value) -> Option<u64> {
        data["index"].as_u64()
    }

    fn call_name<'a>(&self, data: &'a Value) -> &'a Value {
        &data["content_block"]["name"]
    }

    fn renumber(&self, f: &mut Filter, data: &mut Value) -> bool {
        match data["index"].as_u64() {
            Some(index) => {
                let mapped = f.client_index(index);
                set(data.get_mut("index"), json!(mapped))
            }
            None => false,
        }
    }

    fn error_event(&self, _f: &mut Filter, kind: &str, message: &str) -> Event {
        let data = json!({"type": "error", "error": {"type": kind, "message": message}});
        Event::new(Some("error"), &data.to_string())
    }

    fn close(&self, f: &mut Filter, strip: bool, total: Value, out: &mut Vec<Event>) {
        let mut delta = f
            .closing
            .take()
            .map_or_else(|| json!({"type": "message_delta", "delta": {}}), |(_, d)| d);
        if strip {
            delta["delta"]["stop_reason"] = json!("end_turn");
        }
        if !total.is_null() {
            delta["usage"] = total;
        }
        out.push(Event::new(Some("message_delta"), &delta.to_string()));
        out.push(Event::new(
            Some("message_stop"),
            r#"{"type":"message_stop"}"#,
        ));
    }
}

/// Adds a `content_block_delta` to the block it extends.
fn apply_delta(f: &mut Filter, data: &Value) {
    let index = data["index"].as_u64().unwrap_or(0) as usize;
    let Some(block) = f.message["content"].get_mut(index) else {
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
