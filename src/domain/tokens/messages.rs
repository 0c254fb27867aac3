//! Tokens of message lists: OpenAI chat and Anthropic Messages, one walk for both.
//!
//! The overhead is OpenAI's, as its cookbook states it for gpt-3.5-turbo and
//! later chat models ("How to count tokens with tiktoken"): every message costs
//! [`TOKENS_PER_MESSAGE`] beyond its text (`<|start|>{role}<|message|>…<|end|>`
//! minus the role, which is counted as text), a `name` costs
//! [`TOKENS_PER_NAME`] more, and the reply is primed with [`REPLY_PRIMING`]
//! (`<|start|>assistant<|message|>`).
//!
//! Anthropic publishes no per-message overhead (its `count_tokens` endpoint is
//! the only exact source), so Anthropic lists get the same figures: 3 a
//! message, 3 for the reply, and a top-level `system` counted as one more
//! message whose role is `system`. Their counts are estimates in any case
//! (`estimate:anthropic:chars/3.5`), and the method says which overhead was used.
//!
//! What is counted as text, per message: every string field (`role`, `name`,
//! `tool_call_id`, `refusal`, …); `content` as a string, or as a list of parts
//! or blocks: `text`, `thinking`, Anthropic `tool_use` (its `name` and its
//! `input` as compact JSON), `tool_result` (its `content`, string or blocks,
//! recursively); OpenAI `tool_calls[].function.{name, arguments}` (and the
//! legacy `function_call`). Images, audio and files are not counted: their
//! price depends on sizes and rules the text does not show.

use serde_json::{Map, Value};

use super::{Counter, Digested};

/// Tokens every message costs beyond its text.
pub const TOKENS_PER_MESSAGE: u64 = 3;
/// Tokens a `name` field costs beyond its text.
pub const TOKENS_PER_NAME: u64 = 1;
/// Tokens priming the reply (`<|start|>assistant<|message|>`), once per list.
pub const REPLY_PRIMING: u64 = 3;
/// The overhead, as the method of message counts states it.
pub const OVERHEAD_METHOD: &str = "overhead:3/message,1/name,3/reply";

/// Nesting depth past which blocks are not looked into (tool results hold
/// blocks, which could hold tool results…): keeps hostile input from
/// exhausting the stack.
const MAX_DEPTH: usize = 32;

/// Tokens of `messages` (and a top-level `system`), overhead included;
/// texts whose digests `known` holds are not hashed again.
pub fn count(
    counter: &Counter,
    messages: &[Value],
    system: Option<&Value>,
    known: &Digested,
) -> u64 {
    let walk = Walk { counter, known };
    let system = system.map_or(0, |system| {
        TOKENS_PER_MESSAGE + counter.count("system") + walk.content(system, 0)
    });
    let listed: u64 = messages.iter().map(|m| walk.message(m)).sum();
    system + listed + REPLY_PRIMING
}

struct Walk<'a> {
    counter: &'a Counter,
    known: &'a Digested,
}

impl Walk<'_> {
    fn text(&self, text: &str) -> u64 {
        self.counter.count_digested(text, self.known)
    }

    fn message(&self, message: &Value) -> u64 {
        let fields = match message {
            Value::Object(fields) => fields,
            // Not a message object: its text, if any, still reaches the model.
            other => return TOKENS_PER_MESSAGE + self.content(other, 0),
        };
        let mut tokens = TOKENS_PER_MESSAGE;
        for (key, value) in fields {
            tokens += match (key.as_str(), value) {
                ("content", content) => self.content(content, 0),
                ("tool_calls", Value::Array(calls)) => {
                    calls.iter().map(|call| self.tool_call(call)).sum()
                }
                ("function_call", call) => self.function(call),
                ("name", Value::String(name)) => self.text(name) + TOKENS_PER_NAME,
                (_, Value::String(text)) => self.text(text),
                _ => 0,
            };
        }
        tokens
    }

    /// An OpenAI tool call: `{id, type: "function", function: {name, arguments}}`.
    fn tool_call(&self, call: &Value) -> u64 {
        call.get("function").map_or(0, |f| self.function(f))
    }

    /// `{name, arguments}` of an OpenAI function call.
    fn function(&self, function: &Value) -> u64 {
        ["name", "arguments"]
            .iter()
            .filter_map(|key| function.get(key).and_then(Value::as_str))
            .map(|text| self.text(text))
            .sum()
    }

    /// A `content`: a string, a list of parts or blocks, or one block.
    fn content(&self, content: &Value, depth: usize) -> u64 {
        if depth > MAX_DEPTH {
            return 0;
        }
        match content {
            Value::String(text) => self.text(text),
            Value::Array(items) => items.iter().map(|item| self.content(item, depth + 1)).sum(),
            Value::Object(block) => self.block(block, depth),
            _ => 0,
        }
    }

    /// One part (OpenAI) or block (Anthropic).
    fn block(&self, block: &Map<String, Value>, depth: usize) -> u64 {
        let mut tokens = 0;
        for key in ["text", "thinking"] {
            if let Some(Value::String(text)) = block.get(key) {
                tokens += self.text(text);
            }
        }
        match block.get("type").and_then(Value::as_str) {
            Some("tool_use" | "server_tool_use") => {
                if let Some(Value::String(name)) = block.get("name") {
                    tokens += self.text(name);
                }
                if let Some(input) = block.get("input") {
                    tokens += match input {
                        Value::String(text) => self.text(text),
                        other => self.text(&other.to_string()),
                    };
                }
            }
            Some("tool_result") => {
                if let Some(content) = block.get("content") {
                    tokens += self.content(content, depth + 1);
                }
            }
            _ => {}
        }
        tokens
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::Encoding;
    use super::*;

    const GPT4O: Counter = Counter::Exact(Encoding::O200kBase);

    fn n(text: &str) -> u64 {
        GPT4O.count(text)
    }

    #[test]
    fn an_openai_list_costs_its_texts_plus_the_cookbook_overhead() {
        let messages = [
            json!({"role": "system", "content": "You are terse."}),
            json!({"role": "user", "name": "ann", "content": "Sum 2 and 3."}),
        ];
        let expected = 3
            + n("system")
            + n("You are terse.")
            + 3
            + n("user")
            + n("ann")
            + 1
            + n("Sum 2 and 3.")
            + 3;
        assert_eq!(GPT4O.count_messages(&messages, None), expected);
    }

    #[test]
    fn the_cookbook_example_counts_as_published() {
        // OpenAI cookbook "How to count tokens with tiktoken": the API
        // reported 124 prompt tokens for this list with gpt-4o / gpt-4o-mini
        // (o200k_base) and 129 with gpt-4 / gpt-3.5-turbo (cl100k_base).
        let messages = [
            json!({"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."}),
            json!({"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."}),
            json!({"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."}),
            json!({"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."}),
            json!({"role": "system", "name": "example_assistant", "content": "Let's talk later when we're less busy about how to do better."}),
            json!({"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client deliverable."}),
        ];
        assert_eq!(GPT4O.count_messages(&messages, None), 124);
        assert_eq!(
            Counter::Exact(Encoding::Cl100kBase).count_messages(&messages, None),
            129
        );
    }

    #[test]
    fn tool_calls_and_tool_results_count_their_texts() {
        let messages = [
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": "{\"q\":\"err\"}"}}
            ]}),
            json!({"role": "tool", "tool_call_id": "call_1", "content": "3 matches"}),
        ];
        let expected = 3
            + n("assistant")
            + n("grep")
            + n("{\"q\":\"err\"}")
            + 3
            + n("tool")
            + n("call_1")
            + n("3 matches")
            + 3;
        assert_eq!(GPT4O.count_messages(&messages, None), expected);
    }

    #[test]
    fn anthropic_blocks_and_system_count_their_texts() {
        let claude = Counter::for_model(Some("claude-sonnet-4"));
        let c = |t: &str| claude.count(t);
        let input = json!({"path": "/tmp/a.log", "lines": 40});
        let messages = [
            json!({"role": "user", "content": "Read the log."}),
            json!({"role": "assistant", "content": [
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": input},
            ]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "ERROR disk full"}]},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            ]}),
        ];
        let system =
            json!([{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]);
        let expected = (3 + c("system") + c("Be brief."))
            + (3 + c("user") + c("Read the log."))
            + (3 + c("assistant") + c("Reading it.") + c("read_file") + c(&input.to_string()))
            + (3 + c("user") + c("ERROR disk full"))
            + 3;
        assert_eq!(claude.count_messages(&messages, Some(&system)), expected);
        let plain = json!("Be brief.");
        assert_eq!(
            claude.count_messages(&[], Some(&plain)),
            3 + c("system") + c("Be brief.") + 3
        );
    }

    #[test]
    fn hostile_nesting_does_not_overflow() {
        let mut content = json!("deep");
        for _ in 0..200 {
            content = json!([{"type": "tool_result", "content": content}]);
        }
        let messages = [json!({"role": "user", "content": content})];
        assert_eq!(GPT4O.count_messages(&messages, None), 3 + n("user") + 3);
    }
}
