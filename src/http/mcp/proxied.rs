//! Cairn's own tools in a proxied request: `memory_fetch`, `memory_grep` and
//! `memory_search`, with the MCP tools' arguments and guardrails: their
//! definitions (which the domain offers in the provider's tool format to
//! agents and to any request that carries a pointer) and the domain's
//! [`Tools`] port, which answers the model's calls as MCP answers them.

use serde_json::{Value, json};

use std::sync::OnceLock;

use super::params::{FetchArgs, GrepArgs, SearchArgs};
use super::tools as mcp;
use crate::domain::proxying::exchange::{ToolDefinition, Tools};
pub use crate::domain::proxying::wire::{ToolCall, ToolResult};
use crate::http::auth::Caller;
use crate::http::state::AppState;
use crate::model::MemoryFilter;

/// `memory_fetch`.
const FETCH: &str = "memory_fetch";
/// `memory_search`.
const SEARCH: &str = "memory_search";
/// `memory_grep`.
const GREP: &str = "memory_grep";

/// How long `memory_search` waits for the index to hold what was stored
/// before it (this exchange's own offloads among it).
const INDEX_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

const FETCH_DESCRIPTION: &str = "Read part of content Cairn offloaded: a `[cairn: offloaded …` marker \
stands for a stored original, and its `mem://<id>` pointer gets it back exactly. Give `uri` (mem://<id>, \
mem://<id>#L<a>-<b>, or a previous answer's `next`) or `memory_id`, and `line_start`/`line_end` (1-based, \
inclusive) or `byte_offset`/`byte_length`. At most 2,000 lines and 64 KiB per call: `total_lines` gives \
the size, `truncated` says the byte cap cut the range, `next` points to the following range (null at the \
end). Page 200-500 lines at a time; find the lines that matter first with memory_grep or memory_search.";

const GREP_DESCRIPTION: &str = "Find the lines matching a regular expression in one piece of content \
Cairn offloaded (`uri` mem://<id> from a `[cairn: offloaded …` marker, or `memory_id`): answers each \
matching line with its line number (and `context` lines around it); `fixed: true` matches the pattern \
as plain text, `ignore_case: true` ignores case. Then read around a hit with memory_fetch.";

const SEARCH_DESCRIPTION: &str = "Full-text search in the content Cairn stored (offloaded tool outputs \
and texts): answers memory ids, titles and the matching lines with their line numbers, best first; \
then read around a hit with memory_fetch (e.g. line_start = line - 20).";

/// Arguments of the proxy's `memory_search`: three of MCP's filters. Its
/// schema goes upstream with every request that carries a pointer, so it is
/// kept to what a model in a conversation filters on (fewer tokens), and its
/// bytes do not change (they are part of the provider's cached prefix).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProxySearchArgs {
    /// Words (all must match), "a phrase", prefix*, typo~ (a word that may be misspelt), AND, OR, NOT, parentheses.
    query: String,
    /// Only memories of this type.
    #[serde(rename = "type")]
    kind: Option<String>,
    /// Only memories with this tag.
    tag: Option<String>,
    /// Only memories of this thread.
    thread: Option<String>,
    /// Results, 1-100 (default 10).
    limit: Option<u32>,
}

impl From<ProxySearchArgs> for SearchArgs {
    fn from(args: ProxySearchArgs) -> Self {
        Self {
            query: args.query,
            filter: MemoryFilter {
                kind: args.kind,
                tag: args.tag,
                thread: args.thread,
                ..MemoryFilter::default()
            },
            limit: args.limit,
        }
    }
}

/// Cairn's tools as a request offers them, in their fixed order (their
/// bytes are part of the provider's cached prefix: they never change).
pub fn definitions() -> &'static [ToolDefinition] {
    static DEFINITIONS: OnceLock<Vec<ToolDefinition>> = OnceLock::new();
    DEFINITIONS.get_or_init(|| {
        vec![
            ToolDefinition {
                name: FETCH,
                description: FETCH_DESCRIPTION,
                parameters: schema::<FetchArgs>(),
            },
            ToolDefinition {
                name: GREP,
                description: GREP_DESCRIPTION,
                parameters: schema::<GrepArgs>(),
            },
            ToolDefinition {
                name: SEARCH,
                description: SEARCH_DESCRIPTION,
                parameters: schema::<ProxySearchArgs>(),
            },
        ]
    })
}

/// The JSON Schema of a tool's arguments: the MCP tool's, compacted.
///
/// It goes upstream with every request that carries a pointer, and every
/// later request reads it again from the provider's cache, so it keeps
/// what tells a model how to call: the properties, their types,
/// descriptions and bounds, and which are required. It drops what only
/// Rust needs: the schema's own doc comment (written for developers),
/// `format: uint64`, `minimum: 0` of unsigned numbers, `null` among the
/// types of an optional property (leaving it out says the same) and
/// `default` (the descriptions state the defaults that matter; a flag's is
/// false). A release that changes these bytes costs each live
/// conversation one cache miss, on its first request after the upgrade.
fn schema<T: schemars::JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Some(map) = schema.as_object_mut() {
        for key in ["$schema", "title", "description"] {
            map.remove(key);
        }
        if let Some(Value::Object(properties)) = map.get_mut("properties") {
            properties.values_mut().for_each(compact_property);
        }
    }
    schema
}

/// One property of a tool's schema without its Rust-only keys (see [`schema`]).
fn compact_property(property: &mut Value) {
    let Some(map) = property.as_object_mut() else {
        return;
    };
    map.remove("format");
    map.remove("default");
    if map.get("minimum") == Some(&json!(0)) {
        map.remove("minimum");
    }
    if let Some(Value::Array(types)) = map.get("type") {
        let kept: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        if let [only] = kept[..] {
            let only = only.clone();
            map.insert("type".to_owned(), only);
        }
    }
}

/// Cairn's tools for one exchange: the domain's [`Tools`] port, in the
/// caller's namespace, answered as MCP answers them.
pub struct ProxyTools {
    /// The application.
    pub state: AppState,
    /// Whose namespace the calls read.
    pub caller: Caller,
}

#[async_trait::async_trait]
impl Tools for ProxyTools {
    async fn run(&self, call: ToolCall) -> ToolResult {
        run(&self.state, &self.caller, call).await
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
        SEARCH => match serde_json::from_value::<ProxySearchArgs>(call.arguments.clone()) {
            Ok(args) => {
                let args = SearchArgs::from(args);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every property of the MCP tool's schema, with the types it allows
    /// other than `null`.
    fn properties(schema: &Value) -> Vec<(String, Vec<Value>)> {
        let mut all: Vec<(String, Vec<Value>)> = schema["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, p)| {
                let types = match &p["type"] {
                    Value::Array(types) => types.iter().filter(|t| *t != "null").cloned().collect(),
                    other => vec![other.clone()],
                };
                (name.clone(), types)
            })
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    #[test]
    fn the_offered_schemas_keep_every_property_and_type_and_drop_what_only_rust_needs() {
        let full = [
            serde_json::to_value(schemars::schema_for!(FetchArgs)).unwrap(),
            serde_json::to_value(schemars::schema_for!(GrepArgs)).unwrap(),
            serde_json::to_value(schemars::schema_for!(ProxySearchArgs)).unwrap(),
        ];
        for (tool, full) in definitions().iter().zip(&full) {
            let offered = &tool.parameters;
            assert_eq!(properties(offered), properties(full), "{}", tool.name);
            assert_eq!(offered["required"], full["required"], "{}", tool.name);
            assert_eq!(
                offered["additionalProperties"],
                json!(false),
                "{}",
                tool.name
            );
            let text = offered.to_string();
            for dropped in ["\"null\"", "\"format\"", "\"default\"", "\"$schema\""] {
                assert!(
                    !text.contains(dropped),
                    "{}: {dropped} in {text}",
                    tool.name
                );
            }
            assert!(offered.get("description").is_none(), "{}", tool.name);
            for (name, p) in offered["properties"].as_object().unwrap() {
                assert!(
                    p["description"].is_string(),
                    "{}.{name} lost its description",
                    tool.name
                );
            }
        }
    }

    /// A call that gives every argument the offered schema names, each a
    /// value of the type the schema states for it.
    fn call_to(schema: &Value) -> Value {
        let arguments = schema["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, p)| {
                let value = match p["type"].as_str() {
                    Some("integer") => json!(3),
                    Some("boolean") => json!(true),
                    _ => json!("mem://abc"),
                };
                (name.clone(), value)
            })
            .collect();
        Value::Object(arguments)
    }

    #[test]
    fn a_call_written_to_the_offered_schemas_is_read_by_the_tools() {
        let [fetch, grep, search] = definitions() else {
            panic!("three tools");
        };
        let fetch: FetchArgs = serde_json::from_value(call_to(&fetch.parameters)).unwrap();
        assert_eq!(fetch.line_start, Some(3));
        let grep: GrepArgs = serde_json::from_value(call_to(&grep.parameters)).unwrap();
        assert_eq!(grep.after, 3);
        let search: ProxySearchArgs = serde_json::from_value(call_to(&search.parameters)).unwrap();
        assert_eq!(search.limit, Some(3));
    }
}
