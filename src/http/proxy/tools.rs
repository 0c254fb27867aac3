//! Cairn's own tools in a proxied request: `memory_fetch`, `memory_grep` and
//! `memory_search`, offered in the provider's tool format to agents (requests
//! with tools of their own) and to any request that carries a pointer,
//! with the MCP tools' arguments and guardrails; finding the model's calls to
//! them in an answer, running them, and continuing the conversation.

use serde_json::{Value, json};

use crate::domain::proxying::Endpoint;
use crate::http::AppState;
use crate::http::auth::Caller;
use crate::http::mcp::params::{FetchArgs, GrepArgs, SearchArgs};
use crate::http::mcp::tools as mcp;

/// `memory_fetch`.
const FETCH: &str = "memory_fetch";
/// `memory_search`.
const SEARCH: &str = "memory_search";
/// `memory_grep`.
const GREP: &str = "memory_grep";

/// How long `memory_search` waits for the index to hold what was stored
/// before it (this exchange's own offloads among it).
const INDEX_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

const FETCH_DESCRIPTION: &str = "Read part of content that Cairn offloaded: text in this conversation \
that starts with `[cairn: offloaded …` stands for a stored original, and its `mem://<id>` pointer gets it \
back exactly. Give `uri` (mem://<id>, mem://<id>#L<a>-<b>, or the `next` of a previous answer) or \
`memory_id`, and either `line_start`/`line_end` (1-based, inclusive) or `byte_offset`/`byte_length`. \
Each call returns at most 2,000 lines and 64 KiB; `total_lines` tells the size, `truncated` says the \
byte cap cut the range, and `next` points to the following range (null at the end). Page a large \
output 200-500 lines at a time; use memory_search to find the lines that matter first.";

const GREP_DESCRIPTION: &str = "Find the lines matching a regular expression in one piece of content \
Cairn offloaded (`uri` mem://<id> from a `[cairn: offloaded …` marker, or `memory_id`): answers each \
matching line with its line number (and `context` lines around it); `fixed: true` matches the pattern \
as plain text, `ignore_case: true` ignores case. Then read around a hit with memory_fetch.";

const SEARCH_DESCRIPTION: &str = "Full-text search in the content Cairn stored (offloaded tool outputs \
and texts): answers memory ids, titles and the matching lines with their line numbers, best first; \
then read around a hit with memory_fetch (e.g. line_start = line - 20). Query syntax: words (all must \
match), \"a phrase\", prefix*, AND, OR, NOT.";

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
pub struct ToolResult {
    /// The call.
    pub call: ToolCall,
    /// The answer as JSON text (the slice or search view, or the error body).
    pub content: String,
    /// True when the call failed (the content is the error).
    pub is_error: bool,
}

/// Adds Cairn's tools that the request does not define itself; answers the
/// names added (the tools Cairn answers in this exchange). Appended after the
/// client's tools, always in the same order and bytes.
pub fn add(endpoint: Endpoint, body: &mut Value) -> Vec<&'static str> {
    let defined: Vec<String> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            t["name"]
                .as_str()
                .or_else(|| t["function"]["name"].as_str())
                .map(str::to_owned)
        })
        .collect();
    if body.get("tools").is_some_and(|t| !t.is_array()) {
        return Vec::new();
    }
    let mut added = Vec::new();
    for (name, description, schema) in [
        (FETCH, FETCH_DESCRIPTION, schema::<FetchArgs>()),
        (GREP, GREP_DESCRIPTION, schema::<GrepArgs>()),
        (SEARCH, SEARCH_DESCRIPTION, schema::<SearchArgs>()),
    ] {
        if defined.iter().any(|d| d == name) {
            continue;
        }
        let tool = match endpoint {
            Endpoint::Chat => json!({"type": "function", "function": {
                "name": name, "description": description, "parameters": schema}}),
            Endpoint::Responses => json!({"type": "function", "name": name,
                "description": description, "parameters": schema, "strict": false}),
            Endpoint::Messages => json!({"name": name, "description": description,
                "input_schema": schema}),
        };
        let Some(object) = body.as_object_mut() else {
            break;
        };
        if let Value::Array(tools) = object
            .entry("tools")
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            tools.push(tool);
            added.push(name);
        }
    }
    added
}

/// The JSON Schema of a tool's arguments, as the MCP tool publishes it.
fn schema<T: schemars::JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
        map.remove("title");
    }
    schema
}

/// Every tool call of an answer (the first choice, for chat completions).
pub fn calls(endpoint: Endpoint, answer: &Value) -> Vec<ToolCall> {
    let parse = |text: &Value| match text {
        Value::String(s) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
        other => other.clone(),
    };
    let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
    match endpoint {
        Endpoint::Chat => answer["choices"][0]["message"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| ToolCall {
                id: text(&c["id"]),
                name: text(&c["function"]["name"]),
                arguments: parse(&c["function"]["arguments"]),
            })
            .collect(),
        Endpoint::Responses => answer["output"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["type"] == "function_call")
            .map(|c| ToolCall {
                id: text(&c["call_id"]),
                name: text(&c["name"]),
                arguments: parse(&c["arguments"]),
            })
            .collect(),
        Endpoint::Messages => answer["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| ToolCall {
                id: text(&b["id"]),
                name: text(&b["name"]),
                arguments: b["input"].clone(),
            })
            .collect(),
    }
}

/// Runs one of Cairn's calls in the caller's namespace.
pub async fn run(state: &AppState, caller: &Caller, call: ToolCall) -> ToolResult {
    let answer = match call.name.as_str() {
        FETCH => match serde_json::from_value::<FetchArgs>(call.arguments.clone()) {
            Ok(args) => to_json(mcp::fetch(state, caller, args).await),
            Err(e) => Err(bad_arguments(&e)),
        },
        GREP => match serde_json::from_value::<GrepArgs>(call.arguments.clone()) {
            Ok(args) => to_json(mcp::grep(state, caller, args).await),
            Err(e) => Err(bad_arguments(&e)),
        },
        SEARCH => match serde_json::from_value::<SearchArgs>(call.arguments.clone()) {
            Ok(args) => {
                if !state.search.caught_up(INDEX_WAIT).await {
                    tracing::debug!("memory_search runs before the index caught up");
                }
                to_json(mcp::search(state, caller.clone(), args).await)
            }
            Err(e) => Err(bad_arguments(&e)),
        },
        other => Err(
            json!({"error": {"code": "unknown_tool", "message": format!("`{other}` is not a Cairn tool")}}),
        ),
    };
    let (content, is_error) = match answer {
        Ok(value) => (value, false),
        Err(value) => (value, true),
    };
    ToolResult {
        call,
        content: content.to_string(),
        is_error,
    }
}

fn to_json<T: serde::Serialize>(
    result: Result<T, crate::http::error::AppError>,
) -> Result<Value, Value> {
    match result {
        Ok(view) => serde_json::to_value(view)
            .map_err(|e| json!({"error": {"code": "internal", "message": e.to_string()}})),
        Err(err) => Err(err.into_body()),
    }
}

fn bad_arguments(err: &serde_json::Error) -> Value {
    json!({"error": {"code": "invalid_arguments", "message": format!("bad arguments: {err}")}})
}

/// Appends the model's turn (with only Cairn's calls: the client's calls are
/// asked again once Cairn's are answered) and the results to `body`, so the
/// next round continues the same conversation.
pub fn continue_with(endpoint: Endpoint, body: &mut Value, answer: &Value, results: &[ToolResult]) {
    let ours = |id: &str| results.iter().any(|r| r.call.id == id);
    match endpoint {
        Endpoint::Chat => {
            let message = &answer["choices"][0]["message"];
            let calls: Vec<Value> = message["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|c| ours(c["id"].as_str().unwrap_or("")))
                .cloned()
                .collect();
            let mut turn = vec![
                json!({"role": "assistant", "content": message["content"], "tool_calls": calls}),
            ];
            turn.extend(
                results.iter().map(
                    |r| json!({"role": "tool", "tool_call_id": r.call.id, "content": r.content}),
                ),
            );
            append(body, "messages", turn);
        }
        Endpoint::Responses => {
            if let Some(text) = body["input"].as_str() {
                body["input"] = json!([{"role": "user", "content": text}]);
            }
            let mut turn: Vec<Value> = answer["output"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|i| {
                    i["type"] != "function_call" || ours(i["call_id"].as_str().unwrap_or(""))
                })
                .cloned()
                .collect();
            turn.extend(results.iter().map(|r| {
                json!({"type": "function_call_output", "call_id": r.call.id, "output": r.content})
            }));
            append(body, "input", turn);
        }
        Endpoint::Messages => {
            let blocks: Vec<Value> = answer["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["type"] != "tool_use" || ours(b["id"].as_str().unwrap_or("")))
                .cloned()
                .collect();
            let answers: Vec<Value> = results
                .iter()
                .map(|r| {
                    json!({"type": "tool_result", "tool_use_id": r.call.id,
                    "content": r.content, "is_error": r.is_error})
                })
                .collect();
            append(
                body,
                "messages",
                vec![
                    json!({"role": "assistant", "content": blocks}),
                    json!({"role": "user", "content": answers}),
                ],
            );
        }
    }
}

fn append(body: &mut Value, key: &str, items: Vec<Value>) {
    if let Some(Value::Array(list)) = body.get_mut(key) {
        list.extend(items);
    }
}

/// Removes calls to `ours` from a final answer (rounds exhausted), so the
/// client never sees a call to a tool it does not know; a turn left empty
/// says why.
pub fn strip(endpoint: Endpoint, answer: &mut Value, ours: &[&str]) {
    let is_ours = |name: &Value| ours.iter().any(|o| name == o);
    const NOTE: &str = "(cairn: stopped resolving memory tool calls after the round limit)";
    match endpoint {
        Endpoint::Chat => {
            let choice = &mut answer["choices"][0];
            if let Some(Value::Array(calls)) = choice["message"].get_mut("tool_calls") {
                calls.retain(|c| !is_ours(&c["function"]["name"]));
                if calls.is_empty() {
                    if let Some(m) = choice["message"].as_object_mut() {
                        m.remove("tool_calls");
                    }
                    if choice["message"]["content"].is_null() {
                        choice["message"]["content"] = json!(NOTE);
                    }
                    choice["finish_reason"] = json!("stop");
                }
            }
        }
        Endpoint::Responses => {
            if let Some(Value::Array(items)) = answer.get_mut("output") {
                items.retain(|i| !(i["type"] == "function_call" && is_ours(&i["name"])));
            }
        }
        Endpoint::Messages => {
            if let Some(Value::Array(blocks)) = answer.get_mut("content") {
                blocks.retain(|b| !(b["type"] == "tool_use" && is_ours(&b["name"])));
                if !blocks.iter().any(|b| b["type"] == "tool_use") {
                    if blocks.is_empty() {
                        blocks.push(json!({"type": "text", "text": NOTE}));
                    }
                    answer["stop_reason"] = json!("end_turn");
                }
            }
        }
    }
}

/// True when the conversation may need Cairn's tools: it is an agent's (it
/// defines tools of its own: `tools`, or Codex's `additional_tools` input
/// item), or it carries a pointer. An agent gets them
/// from its first request on, after its own tools, so they never move
/// bytes a provider has cached on a later turn.
pub fn wanted(body: &Value) -> bool {
    let defines_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty())
        || body["input"]
            .as_array()
            .is_some_and(|items| items.iter().any(|i| i["type"] == "additional_tools"));
    defines_tools || has_pointer(body)
}

/// True when the request's texts hold a pointer marker Cairn wrote (or a
/// client carried over).
fn has_pointer(value: &Value) -> bool {
    fn find(value: &Value, marker: &mut bool, uri: &mut bool) {
        match value {
            Value::String(s) => {
                *marker |= s.contains("[cairn: ");
                *uri |= s.contains("mem://");
            }
            Value::Array(items) => items.iter().for_each(|v| find(v, marker, uri)),
            Value::Object(map) => map.values().for_each(|v| find(v, marker, uri)),
            _ => {}
        }
    }
    let (mut marker, mut uri) = (false, false);
    find(value, &mut marker, &mut uri);
    marker && uri
}
