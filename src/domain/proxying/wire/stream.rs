//! A provider's stream as the client sees it, round after round: which
//! upstream events pass, wait or are renumbered, each round's answer rebuilt
//! in the non-streaming shape (so its calls can be read and answered), and
//! the closing events of the final round with usage summed over the rounds.
//! What is the same for every API is here ([`Filter`]); each API's events
//! are its folder's `stream.rs` ([`StreamApi`]). The HTTP side reads the
//! upstream's bytes into [`crate::domain::proxying::sse`] events, feeds them
//! here and writes what comes out.

use serde_json::Value;

use super::WireApi;
use crate::domain::DomainError;
use crate::domain::proxying::Endpoint;
use crate::domain::proxying::spliced::Spliced;
use crate::domain::proxying::sse::Event;
use crate::domain::proxying::usage;

/// One API's stream events: how each builds the round's answer, which pass,
/// wait or end the round, how the client's stream numbers them, and how the
/// final round closes.
pub trait StreamApi: Sync {
    /// What to forward now for one upstream event (JSON `data`).
    fn on_event(&self, f: &mut Filter, event: Event, data: Value) -> Vec<Event>;

    /// The round's index an event belongs to (block, output item or tool call).
    fn event_index(&self, data: &Value) -> Option<u64>;

    /// The tool name an event opens a call with (null when it opens none).
    fn call_name<'a>(&self, data: &'a Value) -> &'a Value;

    /// Numbers `data` as the client's stream does (indexes, ids, sequence);
    /// true when anything changed.
    fn renumber(&self, f: &mut Filter, data: &mut Value) -> bool;

    /// The API's own error event, of error type `kind`.
    fn error_event(&self, f: &mut Filter, kind: &str, message: &str) -> Event;

    /// Pushes the end of the final round (its closing event with `total`
    /// usage, the stream's last event) onto `out`; `strip`: Cairn's calls
    /// were taken out of it.
    fn close(&self, f: &mut Filter, strip: bool, total: Value, out: &mut Vec<Event>);

    /// Asks the request's stream for the usage accounting needs, where the
    /// API leaves it out unless asked (chat's `stream_options`); answers
    /// whether the client asked for it itself.
    fn ask_usage(&self, _body: &mut Spliced) -> Result<bool, DomainError> {
        Ok(false)
    }

    /// True when the client numbers tool calls afresh each round (chat).
    fn indexes_per_round(&self) -> bool {
        false
    }
}

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
    wire: &'static dyn WireApi,
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
    /// A stream on `endpoint`, whose calls to `ours` are Cairn's to answer;
    /// `wants_usage`: the client asked for chat's closing usage chunk.
    pub fn new(endpoint: Endpoint, ours: &[&'static str], wants_usage: bool) -> Self {
        Self {
            wire: super::of(endpoint),
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

    /// Adds a finished round's usage object to the total.
    pub fn add_usage(&mut self, round: &Value) {
        if round.is_null() {
            return;
        }
        match &mut self.total_usage {
            Some(total) => usage::add_usage(total, round),
            None => self.total_usage = Some(round.clone()),
        }
    }

    /// Starts the next round's events.
    pub fn next_round(&mut self) {
        self.round += 1;
        self.remap.clear();
        self.our_indexes.clear();
        if self.wire.indexes_per_round() {
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

    /// The round's answer, once its events ended it.
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
        let wire = self.wire;
        wire.on_event(self, event, data)
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
        let wire = self.wire;
        wire.error_event(self, kind, message)
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
        let wire = self.wire;
        wire.close(self, strip, total, &mut out);
        out
    }

    /// The round's index an event belongs to (block, output item or tool call).
    pub(super) fn event_index(&self, data: &Value) -> Option<u64> {
        self.wire.event_index(data)
    }

    /// True when the event opens a call to one of Cairn's tools.
    pub(super) fn names_ours(&self, data: &Value) -> bool {
        let name = self.wire.call_name(data);
        self.ours.iter().any(|o| name == o)
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

    /// An event as the client's stream numbers it (indexes, ids, sequence);
    /// the upstream's own bytes when nothing changes.
    pub(super) fn reissue(&mut self, event: Event, mut data: Value, force: bool) -> Event {
        let wire = self.wire;
        if wire.renumber(self, &mut data) || force {
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

    /// Passes the event on (`pass`, and nothing held), or holds it.
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

/// Sets `slot` to `value`; true when that changed it.
pub(super) fn set(slot: Option<&mut Value>, value: Value) -> bool {
    match slot {
        Some(slot) if *slot != value => {
            *slot = value;
            true
        }
        _ => false,
    }
}
