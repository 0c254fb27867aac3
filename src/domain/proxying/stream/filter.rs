//! What the client sees of each round of a stream: events passed, held,
//! renumbered or dropped, and the closing events of the final round.

use serde_json::{Value, json};

use super::super::sse::Event;
use crate::domain::proxying::Endpoint;
use crate::domain::proxying::spliced::Spliced;
use crate::domain::proxying::usage;
use crate::domain::proxying::wire;

/// One round's answer, rebuilt from its events in the non-streaming shape.
pub struct RoundAnswer {
    /// The answer as the endpoint's `WireApi` reads it (`calls`, `continue_with`).
    pub message: Value,
    /// The round's usage object.
    pub usage: Value,
    /// The model that answered.
    pub model: Option<String>,
}

/// What the client sees of each round.
pub struct Filter {
    pub(super) endpoint: Endpoint,
    pub(super) ours: Vec<&'static str>,
    pub(super) wants_usage: bool,
    pub(super) round: usize,
    /// Events held since the round's first tool call.
    pub(super) held: Vec<(Event, Value)>,
    pub(super) holding: bool,
    /// The client's index of each of this round's blocks, output items or
    /// tool calls (indexes stay contiguous across rounds and stripped calls).
    pub(super) remap: std::collections::HashMap<u64, u64>,
    /// The next index to give (blocks and items: across rounds; chat tool calls: per round).
    pub(super) next_index: u64,
    /// This round's indexes of calls to Cairn's tools (dropped when stripping).
    pub(super) our_indexes: Vec<u64>,
    /// The current round's answer, as it builds up.
    pub(super) message: Value,
    pub(super) usage: Value,
    pub(super) model: Option<String>,
    /// Usage summed over the finished rounds.
    pub(super) total_usage: Option<Value>,
    pub(super) ended: bool,
    /// Chat: the first round's completion id. Responses: the next sequence number.
    pub(super) chat_id: Option<Value>,
    pub(super) sequence: u64,
    /// Responses: the output items forwarded so far (for the final `response.completed`).
    pub(super) items: Vec<Value>,
    /// The event that ends the round (held until Cairn knows it is the last).
    pub(super) closing: Option<(Event, Value)>,
    /// Responses: the held events are a reasoning item's, shown unless a
    /// call follows it (see `wire::Shown`).
    pub(super) tentative: bool,
    /// Chat: text was sent in an earlier round (the next round's text is
    /// set apart by a blank line), and whether this round's was.
    pub(super) text_sent: bool,
    pub(super) round_text_sent: bool,
}

impl Filter {
    pub fn new(endpoint: Endpoint, ours: &[&'static str], wants_usage: bool) -> Self {
        Self {
            endpoint,
            ours: ours.to_vec(),
            wants_usage,
            round: 0,
            held: Vec::new(),
            holding: false,
            remap: std::collections::HashMap::new(),
            next_index: 0,
            our_indexes: Vec::new(),
            message: Value::Null,
            usage: Value::Null,
            model: None,
            total_usage: None,
            ended: false,
            chat_id: None,
            sequence: 0,
            items: Vec::new(),
            closing: None,
            tentative: false,
            text_sent: false,
            round_text_sent: false,
        }
    }

    pub fn add_usage(&mut self, round: &Value) {
        if round.is_null() {
            return;
        }
        match &mut self.total_usage {
            Some(total) => usage::add_usage(total, round),
            None => self.total_usage = Some(round.clone()),
        }
    }

    pub fn next_round(&mut self) {
        self.round += 1;
        self.remap.clear();
        self.our_indexes.clear();
        if self.endpoint == Endpoint::Chat {
            self.next_index = 0;
        }
        self.held.clear();
        self.holding = false;
        self.message = Value::Null;
        self.usage = Value::Null;
        self.ended = false;
        self.closing = None;
        self.tentative = false;
        self.text_sent |= self.round_text_sent;
        self.round_text_sent = false;
    }

    pub fn round_answer(&mut self) -> Option<RoundAnswer> {
        self.ended.then(|| RoundAnswer {
            message: self.message.take(),
            usage: self.usage.clone(),
            model: self.model.clone(),
        })
    }

    /// What to forward now for one upstream event.
    pub fn on_event(&mut self, event: Event) -> Vec<Event> {
        let Ok(data) = serde_json::from_str::<Value>(&event.data) else {
            // `[DONE]`: the end is written by `finish`. Anything else that is
            // no JSON (a keep-alive comment, an event the upstream garbled)
            // goes on as it came, unless the round's events are held.
            if event.data == "[DONE]" {
                self.ended = true;
                return Vec::new();
            }
            return if self.holding {
                Vec::new()
            } else {
                vec![event]
            };
        };
        match self.endpoint {
            Endpoint::Chat => self.chat(event, data),
            Endpoint::Messages => self.messages(event, data),
            Endpoint::Responses => self.responses(event, data),
        }
    }

    /// The event that ends the client's stream when the upstream refused a
    /// retrieval round (`status`, its error `message`): the API's own error
    /// event, so the client shows the provider's error instead of a cut
    /// stream it would retry.
    pub fn error_event(&mut self, status: u16, message: &str) -> Event {
        let kind = if status == 429 {
            "rate_limit_error"
        } else if status >= 500 {
            "api_error"
        } else {
            "invalid_request_error"
        };
        match self.endpoint {
            Endpoint::Chat => Event::new(
                None,
                &json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
                    .to_string(),
            ),
            Endpoint::Messages => Event::new(
                Some("error"),
                &json!({"type": "error", "error": {"type": kind, "message": message}}).to_string(),
            ),
            Endpoint::Responses => {
                let data = json!({"type": "error", "code": kind, "message": message,
                    "param": null, "sequence_number": self.sequence});
                self.sequence += 1;
                Event::new(Some("error"), &data.to_string())
            }
        }
    }

    /// The closing events of the final round: held events (without Cairn's
    /// calls when `strip`), then the end with summed usage.
    pub fn finish(&mut self, strip: bool) -> Vec<Event> {
        let held = std::mem::take(&mut self.held);
        let mut out = Vec::new();
        for (event, data) in held {
            if strip
                && self
                    .event_index(&data)
                    .is_some_and(|i| self.our_indexes.contains(&i))
            {
                continue;
            }
            out.push(self.reissue(event, data, false));
        }
        let total = self.total_usage.clone().unwrap_or(Value::Null);
        match self.endpoint {
            Endpoint::Chat => {
                if let Some((event, mut data)) = self.closing.take() {
                    if strip {
                        data["choices"][0]["finish_reason"] = json!("stop");
                    }
                    out.push(self.reissue(event, data, strip));
                }
                if self.wants_usage {
                    let mut last =
                        json!({"object": "chat.completion.chunk", "choices": [], "usage": total});
                    if let Some(id) = &self.chat_id {
                        last["id"] = id.clone();
                    }
                    if let Some(model) = &self.model {
                        last["model"] = json!(model);
                    }
                    out.push(Event::new(None, &last.to_string()));
                }
                out.push(Event::new(None, "[DONE]"));
            }
            Endpoint::Messages => {
                let mut delta = self
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
            Endpoint::Responses => {
                if let Some((event, mut data)) = self.closing.take() {
                    data["response"]["output"] = Value::Array(self.items.clone());
                    if !total.is_null() {
                        data["response"]["usage"] = total;
                    }
                    out.push(self.reissue(event, data, true));
                }
            }
        }
        out
    }

    /// The round's index an event belongs to (block, output item or tool call).
    pub(super) fn event_index(&self, data: &Value) -> Option<u64> {
        match self.endpoint {
            Endpoint::Chat => data["choices"][0]["delta"]["tool_calls"][0]["index"].as_u64(),
            Endpoint::Messages => data["index"].as_u64(),
            Endpoint::Responses => data["output_index"].as_u64(),
        }
    }

    /// True when the event opens a call to one of Cairn's tools.
    pub(super) fn names_ours(&self, data: &Value) -> bool {
        let named = |v: &Value| self.ours.iter().any(|o| v == o);
        match self.endpoint {
            Endpoint::Chat => {
                named(&data["choices"][0]["delta"]["tool_calls"][0]["function"]["name"])
            }
            Endpoint::Messages => named(&data["content_block"]["name"]),
            Endpoint::Responses => named(&data["item"]["name"]),
        }
    }

    /// The client's index for this round's index `index` (`opens`: the event starts it).
    pub(super) fn client_index(&mut self, index: u64) -> u64 {
        if let Some(mapped) = self.remap.get(&index) {
            return *mapped;
        }
        let mapped = self.next_index;
        self.next_index += 1;
        self.remap.insert(index, mapped);
        mapped
    }

    /// An event as the client's stream numbers it (indexes, ids, sequence).
    /// An event as the client's stream numbers it (indexes, ids, sequence);
    /// the upstream's own bytes when nothing changes.
    pub(super) fn reissue(&mut self, event: Event, mut data: Value, force: bool) -> Event {
        let mut changed = force;
        let mut set = |slot: Option<&mut Value>, value: Value| {
            if let Some(slot) = slot
                && *slot != value
            {
                *slot = value;
                changed = true;
            }
        };
        match self.endpoint {
            Endpoint::Chat => {
                if self.round > 0
                    && let Some(id) = self.chat_id.clone()
                {
                    set(data.get_mut("id"), id);
                }
                let calls = data
                    .pointer_mut("/choices/0/delta/tool_calls")
                    .and_then(Value::as_array_mut);
                for call in calls.into_iter().flatten() {
                    if let Some(index) = call["index"].as_u64() {
                        let mapped = self.remap.get(&index).copied().unwrap_or_else(|| {
                            let m = self.next_index;
                            self.next_index += 1;
                            self.remap.insert(index, m);
                            m
                        });
                        set(call.get_mut("index"), json!(mapped));
                    }
                }
            }
            Endpoint::Messages => {
                if let Some(index) = data["index"].as_u64() {
                    let mapped = self.client_index(index);
                    set(data.get_mut("index"), json!(mapped));
                }
            }
            Endpoint::Responses => {
                if let Some(index) = data["output_index"].as_u64() {
                    let mapped = self.client_index(index);
                    set(data.get_mut("output_index"), json!(mapped));
                }
                set(data.get_mut("sequence_number"), json!(self.sequence));
                self.sequence += 1;
                if let Some(response) = data.get_mut("response")
                    && response["tools"].as_array().is_some_and(|tools| {
                        tools
                            .iter()
                            .any(|t| self.ours.iter().any(|o| t["name"] == *o))
                    })
                {
                    wire::of(Endpoint::Responses).strip_tool_echo(response, &self.ours);
                    changed = true;
                }
                if data["type"] == "response.output_item.done" {
                    self.items.push(data["item"].clone());
                }
            }
        }
        if changed {
            rewritten(&event, data)
        } else {
            event
        }
    }

    /// Sends the held events on (a tentatively held reasoning item that
    /// something other than a call followed).
    pub(super) fn release(&mut self) -> Vec<Event> {
        self.holding = false;
        self.tentative = false;
        let held = std::mem::take(&mut self.held);
        held.into_iter()
            .map(|(event, data)| self.reissue(event, data, false))
            .collect()
    }

    pub(super) fn hold_or_pass(&mut self, event: Event, data: Value, pass: bool) -> Vec<Event> {
        if pass && !self.holding {
            vec![self.reissue(event, data, false)]
        } else {
            self.holding = true;
            if self.names_ours(&data)
                && let Some(index) = self.event_index(&data)
            {
                self.our_indexes.push(index);
            }
            self.held.push((event, data));
            Vec::new()
        }
    }
}

/// `event` carrying `data`, spliced into the upstream's text so that it keeps
/// the upstream's key order.
pub(super) fn rewritten(event: &Event, data: Value) -> Event {
    let name = event.name.as_deref();
    let spliced = Spliced::parse(event.data.clone().into_bytes())
        .and_then(|mut written| written.replace(data.clone()).map(|()| written));
    match spliced {
        Ok(written) => Event::new(name, &String::from_utf8_lossy(written.bytes())),
        Err(_) => Event::new(name, &data.to_string()),
    }
}
