//! What each provider API looks like on the wire, one folder per API
//! (`chat/`, `responses/`, `messages/`) behind [`WireApi`]: where a request's
//! conversation is, how a tool is defined, where an answer's tool calls are,
//! how a conversation goes on with their results, what of a hidden round the
//! client is shown, what of Cairn's tools is taken out of a final answer,
//! what an answer's usage means, and the API's stream events (each folder's
//! `stream.rs`, behind [`stream::StreamApi`]). The providers' error bodies
//! are `errors.rs`. The rewrite, the exchange and the stream ask the
//! endpoint's [`WireApi`] and never match on the API itself for these.

use serde_json::Value;

use super::Endpoint;
use super::first_offload::json_bytes;
use super::usage::Usage;
use crate::domain::DomainError;
use crate::domain::compress::format::{self, Format};
use crate::domain::compress::{marker, pairs};

mod chat;
pub mod errors;
mod messages;
pub mod responses;
pub mod stream;

/// The separator between the texts of two rounds in one chat message.
pub const ROUND_SEPARATOR: &str = "\n\n";

/// Said in a final answer whose only calls were Cairn's, once the round limit
/// stopped Cairn from answering them.
const ROUND_LIMIT_NOTE: &str = "(cairn: stopped resolving memory tool calls after the round limit)";

/// A tool call found in an answer.
#[derive(Clone, Debug)]
pub struct ToolCall {
    /// The call's id (`tool_call_id`, `call_id`, `tool_use_id`).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Its arguments as JSON.
    pub arguments: Value,
}

/// What running one of Cairn's calls gave.
#[derive(Clone, Debug)]
pub struct ToolResult {
    /// The call.
    pub call: ToolCall,
    /// The answer as JSON text (the slice or search view, or the error body).
    pub content: String,
    /// True when the call failed (the content is the error).
    pub is_error: bool,
}

/// A request's conversation, taken out of its body to be rewritten.
pub struct Conversation {
    /// The format compression reads the messages in.
    pub format: Format,
    /// The message list (for Responses: its `input` items seen as messages).
    pub messages: Vec<Value>,
    /// Anthropic's `system` prompt.
    pub system: Option<Value>,
    /// For Responses: the mapping back to `input` items.
    pub items: Option<responses::items::Mapped>,
}

/// One provider API's format, for the parts of an exchange that depend on it.
pub trait WireApi: stream::StreamApi {
    /// Takes the conversation out of `body`, checked as compress checks it
    /// (so compressing cannot fail on its shape); `None` when there is none.
    fn take_conversation(&self, body: &mut Value) -> Result<Option<Conversation>, DomainError>;

    /// Puts a rewritten conversation back where [`Self::take_conversation`]
    /// found it.
    fn put_back(&self, body: &mut Value, conversation: Conversation) {
        body["messages"] = Value::Array(conversation.messages);
        if let Some(system) = conversation.system {
            body["system"] = system;
        }
    }

    /// Bytes of what `body` holds besides the conversation once
    /// [`Self::take_conversation`] has taken it (the client's tools and
    /// settings): what comes before its first message in the cache.
    fn envelope_bytes(&self, body: &Value) -> usize {
        json_bytes(body)
    }

    /// The array of the body that holds the conversation.
    fn conversation_key(&self) -> &'static str {
        "messages"
    }

    /// What opens the conversation before its first message (the system
    /// prompt or instructions), null when nothing does.
    fn opening<'a>(&self, _body: &'a Value) -> &'a Value {
        &Value::Null
    }

    /// An answer's usage object (of a chat completion, a response or a
    /// message), read as its provider means it.
    fn usage(&self, usage: &serde_json::Map<String, Value>) -> Usage;

    /// A function tool `name` with `description` and the JSON Schema `parameters`.
    fn tool(&self, name: &str, description: &str, parameters: &Value) -> Value;

    /// Every tool call of an answer (the first choice, for chat completions).
    fn calls(&self, answer: &Value) -> Vec<ToolCall>;

    /// Appends the model's turn (with only the calls `results` answer: the
    /// client's calls are asked again once Cairn's are answered) and the
    /// results to `body`, so the next round continues the same conversation.
    fn continue_with(&self, body: &mut Value, answer: &Value, results: &[ToolResult]);

    /// Removes calls to `ours` from a final answer (rounds exhausted), so the
    /// client never sees a call to a tool it does not know; a turn left
    /// empty says why.
    fn strip_calls(&self, answer: &mut Value, ours: &[&str]);

    /// What a hidden round's answer shows the client: everything before its
    /// first tool call (chat texts, Messages blocks, Responses items), pushed
    /// onto `shown`.
    fn keep_shown(&self, answer: &Value, shown: &mut Vec<Value>);

    /// Puts what the hidden rounds showed in front of the final answer.
    fn prepend_shown(&self, shown: Vec<Value>, answer: &mut Value);

    /// Removes Cairn's tools from an answer's echo of the request's tools
    /// (only the Responses API echoes them).
    fn strip_tool_echo(&self, _answer: &mut Value, _ours: &[&str]) {}
}

/// The format of `endpoint`.
pub fn of(endpoint: Endpoint) -> &'static dyn WireApi {
    match endpoint {
        Endpoint::Chat => &chat::Chat,
        Endpoint::Responses => &responses::Responses,
        Endpoint::Messages => &messages::Messages,
    }
}

/// What the client sees of the rounds Cairn resolved itself, the same in a
/// JSON answer as in a stream: everything a hidden round said before its
/// first tool call (text, thinking, reasoning items), except an OpenAI
/// reasoning item that stood right before that call — the provider accepts
/// a reasoning item back only with the item that followed it, and that item
/// was a call the client never sees. Chat completions join the rounds'
/// texts with [`ROUND_SEPARATOR`].
pub struct Shown {
    wire: &'static dyn WireApi,
    kept: Vec<Value>,
}

impl Shown {
    /// Nothing shown yet, for an exchange on `endpoint`.
    pub fn new(endpoint: Endpoint) -> Self {
        Self {
            wire: of(endpoint),
            kept: Vec::new(),
        }
    }

    /// Keeps what a hidden round's answer shows the client.
    pub fn keep(&mut self, answer: &Value) {
        self.wire.keep_shown(answer, &mut self.kept);
    }

    /// Puts what the hidden rounds showed in front of the final answer.
    pub fn prepend_to(self, answer: &mut Value) {
        if !self.kept.is_empty() {
            self.wire.prepend_shown(self.kept, answer);
        }
    }
}

/// True when the conversation needs Cairn's tools: it carries a pointer,
/// or — with `agents` — it is an agent's (it defines tools of its own:
/// `tools`, or Codex's `additional_tools` input item). An agent then gets
/// them from its first request on, after its own tools, so they never move
/// bytes a provider has cached on a later turn; without `agents` a
/// conversation that never offloads pays nothing for them, and its first
/// pointer costs one cache miss.
pub fn wants_tools(body: &Value, agents: bool) -> bool {
    let defines_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty())
        || body["input"]
            .as_array()
            .is_some_and(|items| items.iter().any(|i| i["type"] == "additional_tools"));
    (agents && defines_tools) || has_pointer(body)
}

/// True when one of the request's texts is a pointer marker Cairn wrote
/// (or a client carried over): a whole text whose first line is a marker
/// ([`marker::is_marker`]), as every marker Cairn writes replaces a whole
/// text. A tool output that merely quotes `[cairn: ` and `mem://` (Cairn's
/// own README or sources, `git grep` of them) is not one: it would bring
/// Cairn's tools, and break the request's cached prefix, with nothing
/// weighed.
fn has_pointer(value: &Value) -> bool {
    match value {
        Value::String(s) => marker::is_marker(s),
        Value::Array(items) => items.iter().any(has_pointer),
        Value::Object(map) => map.values().any(has_pointer),
        _ => false,
    }
}

/// The `messages` of `body` in `format` (with its `system` prompt when
/// `system`), checked as compress checks them; `None` when there are none.
fn take_messages(
    body: &mut Value,
    format: Format,
    system: bool,
) -> Result<Option<Conversation>, DomainError> {
    let Some(Value::Array(messages)) = body.get("messages") else {
        return Ok(None);
    };
    let prompt = if system { body.get("system") } else { None };
    check(format, messages, prompt)?;
    let messages = match body.get_mut("messages").map(Value::take) {
        Some(Value::Array(messages)) => messages,
        _ => Vec::new(),
    };
    let system = if system {
        body.get_mut("system").map(Value::take)
    } else {
        None
    };
    Ok(Some(Conversation {
        format,
        messages,
        system,
        items: None,
    }))
}

/// Checks a message list as compress checks it.
fn check(format: Format, messages: &[Value], system: Option<&Value>) -> Result<(), DomainError> {
    format::validate(format, messages, system)?;
    pairs::check(format, messages, false)
}

/// The count at `key` of a usage object, or 0.
fn count(usage: &serde_json::Map<String, Value>, key: &str) -> u64 {
    usage.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// OpenAI's usage, whose APIs name the same counts differently (`[input,
/// output, details]`): the input includes the `cached_tokens` of its
/// details, and caching writes cost nothing extra.
fn openai_usage(
    usage: &serde_json::Map<String, Value>,
    [input, output, details]: [&str; 3],
) -> Usage {
    Usage {
        input: count(usage, input),
        output: count(usage, output),
        cache_read: usage
            .get(details)
            .and_then(|d| d["cached_tokens"].as_u64())
            .unwrap_or(0),
        cache_write: 0,
    }
}

/// The string of `v`, or "".
fn text(v: &Value) -> String {
    v.as_str().unwrap_or("").to_owned()
}

/// Arguments sent as a JSON string, parsed (kept as the string if they are not JSON).
fn parsed_arguments(arguments: &Value) -> Value {
    match arguments {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
        other => other.clone(),
    }
}

/// Appends `items` to the array at `key` of `body`.
fn append(body: &mut Value, key: &str, items: Vec<Value>) {
    if let Some(Value::Array(list)) = body.get_mut(key) {
        list.extend(items);
    }
}

/// Puts `shown` in front of the array at `key` of `answer`.
fn prepend(answer: &mut Value, key: &str, mut shown: Vec<Value>) {
    if let Some(Value::Array(list)) = answer.get_mut(key) {
        shown.append(list);
        *list = shown;
    }
}

/// True when `name` is one of `ours`.
fn is_ours(name: &Value, ours: &[&str]) -> bool {
    ours.iter().any(|o| name == o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_marker_cairn_wrote_asks_for_its_tools_not_a_quote_of_one() {
        let id = "ab".repeat(32);
        let written = marker::render("offloaded tool_output pytest", &id, 10, 99, "summary");
        let with = |output: &str| {
            json!({"messages": [
                {"role": "user", "content": "Run it."},
                {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": output},
            ]})
        };
        assert!(wants_tools(&with(&written), false), "a marker Cairn wrote");
        // `git grep` of Cairn's sources, `cat` of its README: both strings
        // are there, but no text is a marker.
        let quoted = format!(
            "src/domain/compress/marker.rs:3://! A marker's first line is `{written}`\n\
             README.md:40:pointers look like mem://{id}"
        );
        assert!(!wants_tools(&with(&quoted), false), "{quoted}");
        let split = json!({"messages": [
            {"role": "user", "content": "[cairn: see the docs]"},
            {"role": "user", "content": format!("mem://{id}")},
        ]});
        assert!(!wants_tools(&split, false), "the two halves in two texts");
        // Anthropic's tool_result blocks hold it one level deeper.
        let anthropic = json!({"messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1",
             "content": [{"type": "text", "text": written}]}]}]});
        assert!(wants_tools(&anthropic, false));
    }

    #[test]
    fn a_reasoning_item_before_a_hidden_call_is_not_shown() {
        let round = json!({"output": [
            {"type": "reasoning", "id": "rs_1"},
            {"type": "function_call", "name": "memory_fetch", "call_id": "c1"}]});
        let with_preamble = json!({"output": [
            {"type": "reasoning", "id": "rs_2"},
            {"type": "message", "id": "msg_2"},
            {"type": "function_call", "name": "memory_fetch", "call_id": "c2"}]});
        let mut shown = Shown::new(Endpoint::Responses);
        shown.keep(&round);
        shown.keep(&with_preamble);
        let mut last = json!({"output": [{"type": "message", "id": "msg_3"}]});
        shown.prepend_to(&mut last);
        let ids: Vec<&str> = last["output"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["rs_2", "msg_2", "msg_3"]);
    }

    #[test]
    fn usage_is_read_as_each_provider_means_it() {
        let read = |endpoint, usage: Value| of(endpoint).usage(usage.as_object().unwrap());
        let cases = [
            (
                Endpoint::Messages,
                json!({"input_tokens": 10, "output_tokens": 5,
                    "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}),
                [130, 5, 100, 20],
            ),
            (
                Endpoint::Chat,
                json!({"prompt_tokens": 120, "completion_tokens": 7,
                    "prompt_tokens_details": {"cached_tokens": 64}}),
                [120, 7, 64, 0],
            ),
            (
                Endpoint::Responses,
                json!({"input_tokens": 50, "output_tokens": 3,
                    "input_tokens_details": {"cached_tokens": 32}}),
                [50, 3, 32, 0],
            ),
        ];
        for (endpoint, usage, [input, output, cache_read, cache_write]) in cases {
            let expected = Usage {
                input,
                output,
                cache_read,
                cache_write,
            };
            assert_eq!(read(endpoint, usage), expected, "{endpoint:?}");
        }
    }

    #[test]
    fn chat_rounds_are_joined_by_a_blank_line() {
        let mut shown = Shown::new(Endpoint::Chat);
        shown.keep(&json!({"choices": [{"message": {"content": "Looking."}}]}));
        let mut last = json!({"choices": [{"message": {"content": "Found it."}}]});
        shown.prepend_to(&mut last);
        assert_eq!(
            last["choices"][0]["message"]["content"],
            "Looking.\n\nFound it."
        );
    }

    #[test]
    fn each_api_finds_its_calls_and_goes_on_with_only_cairns() {
        let cases = [
            (
                Endpoint::Chat,
                json!({"messages": [{"role": "user", "content": "q"}]}),
                json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "memory_grep", "arguments": "{\"pattern\":\"x\"}"}},
                    {"id": "b", "type": "function", "function": {"name": "run", "arguments": "{}"}}]}}]}),
            ),
            (
                Endpoint::Responses,
                json!({"input": "q"}),
                json!({"output": [
                    {"type": "function_call", "call_id": "a", "name": "memory_grep", "arguments": "{\"pattern\":\"x\"}"},
                    {"type": "function_call", "call_id": "b", "name": "run", "arguments": "{}"}]}),
            ),
            (
                // Codex's freeform `exec` beside Cairn's call: it waits too.
                Endpoint::Responses,
                json!({"input": [{"role": "user", "content": "q"}]}),
                json!({"output": [
                    {"type": "function_call", "call_id": "a", "name": "memory_grep", "arguments": "{\"pattern\":\"x\"}"},
                    {"type": "custom_tool_call", "call_id": "b", "name": "run", "input": "ls"}]}),
            ),
            (
                Endpoint::Messages,
                json!({"messages": [{"role": "user", "content": "q"}]}),
                json!({"content": [
                    {"type": "tool_use", "id": "a", "name": "memory_grep", "input": {"pattern": "x"}},
                    {"type": "tool_use", "id": "b", "name": "run", "input": {}}]}),
            ),
        ];
        for (endpoint, mut body, answer) in cases {
            let wire = of(endpoint);
            let calls = wire.calls(&answer);
            assert!(!calls.is_empty(), "{endpoint:?}");
            assert_eq!(calls[0].arguments, json!({"pattern": "x"}), "{endpoint:?}");
            let ours = ToolResult {
                call: calls[0].clone(),
                content: "{}".into(),
                is_error: false,
            };
            wire.continue_with(&mut body, &answer, &[ours]);
            let sent = body.to_string();
            assert!(sent.contains("memory_grep"), "{endpoint:?}: {sent}");
            assert!(
                !sent.contains("\"run\""),
                "{endpoint:?}: the client's call waits: {sent}"
            );
        }
    }
}
