//! Responses' stream: `response.created`/`in_progress` once, output items
//! added, extended and done (a reasoning item held until the next item
//! shows whether it may be shown), one sequence across rounds, Cairn's tools
//! taken out of every echoed response object, and the final
//! `response.completed` with every item forwarded and the summed usage.

use serde_json::{Value, json};

use super::Responses;
use crate::domain::proxying::sse::Event;
use crate::domain::proxying::wire::WireApi;
use crate::domain::proxying::wire::stream::{Filter, StreamApi, set};

impl StreamApi for Responses {
    fn on_event(&self, f: &mut Filter, event: Event, data: Value) -> Vec<Event> {
        let kind = data["type"].as_str().unwrap_or("").to_owned();
        match kind.as_str() {
            "response.created" | "response.in_progress" => {
                if f.round == 0 {
                    return vec![f.reissue(event, data, false)];
                }
                Vec::new()
            }
            "response.completed" => {
                f.message = data["response"].clone();
                f.usage = data["response"]["usage"].clone();
                f.model = data["response"]["model"].as_str().map(str::to_owned);
                f.closing = Some((event, data));
                f.ended = true;
                Vec::new()
            }
            "response.output_item.added" => {
                let kind = data["item"]["type"].as_str().unwrap_or("").to_owned();
                let kind = kind.as_str();
                let is_call = matches!(kind, "function_call" | "custom_tool_call");
                let mut out = Vec::new();
                if f.tentative {
                    if is_call {
                        f.tentative = false;
                    } else {
                        out = f.release();
                    }
                }
                if kind == "reasoning" && !f.holding {
                    // Held until the next item shows whether it may be shown.
                    f.holding = true;
                    f.tentative = true;
                }
                out.extend(f.hold_or_pass(event, data, !is_call));
                out
            }
            _ => f.hold_or_pass(event, data, true),
        }
    }

    fn event_index(&self, data: &Value) -> Option<u64> {
        data["output_index"].as_u64()
    }

    fn call_name<'a>(&self, data: &'a Value) -> &'a Value {
        &data["item"]["name"]
    }

    fn renumber(&self, f: &mut Filter, data: &mut Value) -> bool {
        let mut changed = false;
        if let Some(index) = data["output_index"].as_u64() {
            let mapped = f.client_index(index);
            changed |= set(data.get_mut("output_index"), json!(mapped));
        }
        changed |= set(data.get_mut("sequence_number"), json!(f.sequence));
        f.sequence += 1;
        if let Some(response) = data.get_mut("response")
            && response["tools"]
                .as_array()
                .is_some_and(|tools| tools.iter().any(|t| f.ours.iter().any(|o| t["name"] == *o)))
        {
            self.strip_tool_echo(response, &f.ours);
            changed = true;
        }
        if data["type"] == "response.output_item.done" {
            f.items.push(data["item"].clone());
        }
        changed
    }

    fn error_event(&self, f: &mut Filter, kind: &str, message: &str) -> Event {
        let data = json!({"type": "error", "code": kind, "message": message,
            "param": null, "sequence_number": f.sequence});
        f.sequence += 1;
        Event::new(Some("error"), &data.to_string())
    }

    fn close(&self, f: &mut Filter, _strip: bool, total: Value, out: &mut Vec<Event>) {
        if let Some((event, mut data)) = f.closing.take() {
            data["response"]["output"] = Value::Array(f.items.clone());
            if !total.is_null() {
                data["response"]["usage"] = total;
            }
            out.push(f.reissue(event, data, true));
        }
    }
}
