//! Streaming exchanges (`"stream": true`): one well-formed SSE stream for the
//! client. Text is forwarded event by event as it arrives; from the round's
//! first tool call on, events are held until the round ends (tool calls are
//! short, and only then is it known whether Cairn answers them). A round
//! that calls Cairn's tools is consumed — its calls answered, the upstream
//! asked again — and the next round's events continue the same stream
//! (indexes and sequence numbers carried on, its opening events dropped).
//! The final round's held events and closing events follow, with usage
//! summed over the rounds. An upstream that cuts its stream cuts the client's.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::answer::respond;
use super::sse::{Event, Parser};
use super::{Exchange, tools, upstream};
use crate::domain::proxying::Endpoint;
use crate::domain::proxying::usage::{self, Round, Usage};
use crate::http::error::AppError;

/// Longest silence of an upstream stream before it counts as cut.
const IDLE: Duration = Duration::from_secs(300);

type Chunk = Result<Bytes, std::io::Error>;

/// Starts the exchange; answers the stream's head as soon as the first round's comes.
pub async fn run(x: Exchange, mut body: Value, bytes: Vec<u8>) -> Result<Response, AppError> {
    let wants_usage = body["stream_options"]["include_usage"] == Value::Bool(true);
    let bytes = if x.endpoint == Endpoint::Chat && !wants_usage {
        // Usage is what accounting needs: asked for, and kept from a client that did not ask.
        body["stream_options"]["include_usage"] = Value::Bool(true);
        serde_json::to_vec(&body).map_err(|e| AppError::bad_request(e.to_string()))?
    } else {
        bytes
    };
    let proxy = x.proxy();
    let asked = Instant::now();
    let first = upstream::send(
        &proxy.client,
        &x.url,
        x.headers.clone(),
        bytes,
        proxy.timeout,
    )
    .await?;
    let waited = asked.elapsed();
    let status = first.status();
    let mut headers = upstream::response_headers(first.headers());
    headers.extend(x.cairn_headers(0));
    let is_sse = first
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if !status.is_success() || !is_sse {
        x.record_latency(waited);
        return Ok(respond(
            status,
            headers,
            Body::from_stream(first.bytes_stream()),
        ));
    }
    let (tx, rx) = mpsc::channel::<Chunk>(64);
    tokio::spawn(async move {
        let mut rounds = Rounds {
            filter: Filter::new(x.endpoint, &x.ours, wants_usage),
            x,
            body,
            tx,
            waited,
        };
        rounds.drive(first).await;
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    headers.insert(
        axum::http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    Ok(respond(StatusCode::OK, headers, Body::from_stream(stream)))
}

/// The task feeding the client's stream.
struct Rounds {
    x: Exchange,
    body: Value,
    filter: Filter,
    tx: mpsc::Sender<Chunk>,
    waited: Duration,
}

impl Rounds {
    async fn drive(&mut self, mut response: reqwest::Response) {
        let mut rounds = 0;
        let mut first_cache_write = None;
        loop {
            let Some(answer) = self.pump(response).await else {
                return;
            };
            let round_usage = Usage::of(self.x.endpoint, &answer.usage);
            if let Some(u) = round_usage {
                first_cache_write.get_or_insert(u.cache_write);
                let model = answer.model.clone().unwrap_or_else(|| self.x.model.clone());
                let estimated = (rounds == 0).then_some(self.x.report.tokens_after);
                usage::record_round(
                    &self.x.state.ledger,
                    &self.x.caller.namespace,
                    &Round {
                        endpoint: self.x.endpoint,
                        model: &model,
                        usage: u,
                        estimated_input: estimated,
                    },
                )
                .await;
            }
            self.filter.add_usage(&answer.usage);
            let ours: Vec<tools::ToolCall> = tools::calls(self.x.endpoint, &answer.message)
                .into_iter()
                .filter(|c| self.x.ours.contains(&c.name.as_str()))
                .collect();
            if ours.is_empty() || rounds + 1 >= self.x.proxy().max_rounds {
                let events = self.filter.finish(!ours.is_empty());
                for event in events {
                    if !self.send(event.raw).await {
                        return;
                    }
                }
                if let Err(e) = self.x.record_saving(first_cache_write.unwrap_or(0)).await {
                    tracing::warn!(error = e.message(), "could not record the proxy's saving");
                }
                self.x.record_latency(self.waited);
                return;
            }
            let mut results = Vec::with_capacity(ours.len());
            for call in ours {
                results.push(tools::run(&self.x.state, &self.x.caller, call).await);
            }
            tools::continue_with(self.x.endpoint, &mut self.body, &answer.message, &results);
            self.filter.next_round();
            rounds += 1;
            self.x
                .state
                .metrics
                .proxy
                .rounds
                .with_label_values(&[self.x.endpoint.provider().name()])
                .inc();
            let Ok(bytes) = serde_json::to_vec(&self.body) else {
                return self.cut("cannot serialize the next round").await;
            };
            let proxy = self.x.proxy();
            let asked = Instant::now();
            let next = upstream::send(
                &proxy.client,
                &self.x.url,
                self.x.headers.clone(),
                bytes,
                proxy.timeout,
            )
            .await;
            self.waited += asked.elapsed();
            match next {
                Ok(next) if next.status().is_success() => response = next,
                Ok(next) => {
                    let detail =
                        format!("upstream answered {} to a retrieval round", next.status());
                    return self.cut(&detail).await;
                }
                Err(e) => return self.cut(e.message()).await,
            }
        }
    }

    /// Forwards one round's stream through the filter; answers the round's
    /// answer, or None when the stream was cut (the client's is cut too).
    async fn pump(&mut self, response: reqwest::Response) -> Option<RoundAnswer> {
        let mut parser = Parser::default();
        let mut bytes = response.bytes_stream();
        loop {
            let started = Instant::now();
            let next = tokio::time::timeout(IDLE, bytes.next()).await;
            self.waited += started.elapsed();
            match next {
                Ok(Some(Ok(chunk))) => {
                    for event in parser.push(&chunk) {
                        for out in self.filter.on_event(event) {
                            if !self.send(out.raw).await {
                                return None;
                            }
                        }
                    }
                }
                Ok(Some(Err(e))) => {
                    self.cut(&e.to_string()).await;
                    return None;
                }
                Ok(None) => break,
                Err(_) => {
                    self.cut("the upstream stream went silent").await;
                    return None;
                }
            }
        }
        match self.filter.round_answer() {
            Some(answer) if !parser.has_partial() => Some(answer),
            _ => {
                self.cut("the upstream stream ended before the answer did")
                    .await;
                None
            }
        }
    }

    async fn send(&self, bytes: Vec<u8>) -> bool {
        self.tx.send(Ok(Bytes::from(bytes))).await.is_ok()
    }

    /// Ends the client's stream with an error: never a clean end.
    async fn cut(&self, why: &str) {
        tracing::warn!(reason = why, "proxied stream cut");
        let _ = self
            .tx
            .send(Err(std::io::Error::other(why.to_owned())))
            .await;
    }
}

/// One round's answer, rebuilt from its events in the non-streaming shape.
struct RoundAnswer {
    /// The answer as `tools::calls` and `tools::continue_with` read it.
    message: Value,
    /// The round's usage object.
    usage: Value,
    /// The model that answered.
    model: Option<String>,
}

/// What the client sees of each round.
struct Filter {
    endpoint: Endpoint,
    ours: Vec<&'static str>,
    wants_usage: bool,
    round: usize,
    /// Events held since the round's first tool call.
    held: Vec<(Event, Value)>,
    holding: bool,
    /// The client's index of each of this round's blocks, output items or
    /// tool calls (indexes stay contiguous across rounds and stripped calls).
    remap: std::collections::HashMap<u64, u64>,
    /// The next index to give (blocks and items: across rounds; chat tool calls: per round).
    next_index: u64,
    /// This round's indexes of calls to Cairn's tools (dropped when stripping).
    our_indexes: Vec<u64>,
    /// The current round's answer, as it builds up.
    message: Value,
    usage: Value,
    model: Option<String>,
    /// Usage summed over the finished rounds.
    total_usage: Option<Value>,
    ended: bool,
    /// Chat: the first round's completion id. Responses: the next sequence number.
    chat_id: Option<Value>,
    sequence: u64,
    /// Responses: the output items forwarded so far (for the final `response.completed`).
    items: Vec<Value>,
    /// The event that ends the round (held until Cairn knows it is the last).
    closing: Option<(Event, Value)>,
}

impl Filter {
    fn new(endpoint: Endpoint, ours: &[&'static str], wants_usage: bool) -> Self {
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
        }
    }

    fn add_usage(&mut self, round: &Value) {
        if round.is_null() {
            return;
        }
        match &mut self.total_usage {
            Some(total) => usage::add_usage(total, round),
            None => self.total_usage = Some(round.clone()),
        }
    }

    fn next_round(&mut self) {
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
    }

    fn round_answer(&mut self) -> Option<RoundAnswer> {
        self.ended.then(|| RoundAnswer {
            message: self.message.take(),
            usage: self.usage.clone(),
            model: self.model.clone(),
        })
    }

    /// What to forward now for one upstream event.
    fn on_event(&mut self, event: Event) -> Vec<Event> {
        let Ok(data) = serde_json::from_str::<Value>(&event.data) else {
            // `[DONE]`, comments: the end is written by `finish`.
            if event.data == "[DONE]" {
                self.ended = true;
            }
            return Vec::new();
        };
        match self.endpoint {
            Endpoint::Chat => self.chat(event, data),
            Endpoint::Messages => self.messages(event, data),
            Endpoint::Responses => self.responses(event, data),
        }
    }

    /// The closing events of the final round: held events (without Cairn's
    /// calls when `strip`), then the end with summed usage.
    fn finish(&mut self, strip: bool) -> Vec<Event> {
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
    fn event_index(&self, data: &Value) -> Option<u64> {
        match self.endpoint {
            Endpoint::Chat => data["choices"][0]["delta"]["tool_calls"][0]["index"].as_u64(),
            Endpoint::Messages => data["index"].as_u64(),
            Endpoint::Responses => data["output_index"].as_u64(),
        }
    }

    /// True when the event opens a call to one of Cairn's tools.
    fn names_ours(&self, data: &Value) -> bool {
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
    fn client_index(&mut self, index: u64) -> u64 {
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
    fn reissue(&mut self, event: Event, mut data: Value, force: bool) -> Event {
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
                if data["type"] == "response.output_item.done" {
                    self.items.push(data["item"].clone());
                }
            }
        }
        if changed {
            Event::new(event.name.as_deref(), &data.to_string())
        } else {
            event
        }
    }

    fn hold_or_pass(&mut self, event: Event, data: Value, pass: bool) -> Vec<Event> {
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

impl Filter {
    fn chat(&mut self, event: Event, data: Value) -> Vec<Event> {
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
        self.hold_or_pass(event, data, calls.is_empty())
    }

    fn messages(&mut self, event: Event, data: Value) -> Vec<Event> {
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

    fn responses(&mut self, event: Event, data: Value) -> Vec<Event> {
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
                let pass = data["item"]["type"] != "function_call";
                self.hold_or_pass(event, data, pass)
            }
            _ => self.hold_or_pass(event, data, true),
        }
    }
}
