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

/// The JSON Schema of a tool's arguments, as the MCP tool publishes it.
fn schema<T: schemars::JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
        map.remove("title");
    }
    schema
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
