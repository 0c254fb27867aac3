//! The MCP tools: put, fetch, grep, search and stats over the same domain calls,
//! guardrails and namespaces as the REST API.

use std::convert::Infallible;

use axum::http::request::Parts;
use bytes::Bytes;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::Extension;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, tool, tool_handler, tool_router};
use serde::Serialize;

use super::params::{FetchArgs, GrepArgs, PutArgs, QueryArgs, SearchArgs, StatsArgs, pointer};
use crate::domain::memories::grep::GrepQuery;
use crate::domain::memories::put;
use crate::domain::memories::uri::Selector;
use crate::domain::search::{DEFAULT_RESULTS, MAX_RESULTS};
use crate::http::auth::Caller;
use crate::http::error::AppError;
use crate::http::filters::{limit, list_query};
use crate::http::state::AppState;
use crate::http::views::{GrepView, PutView, QueryView, SearchView, SliceView, StatsView};

/// What the server tells a model about itself at `initialize`.
const INSTRUCTIONS: &str = "Cairn stores large tool outputs so they need not stay in your context. \
Put a big output with memory_put and keep only the returned summary and `uri` (a mem:// pointer). \
When you need part of it again, call memory_fetch with that uri and a line range; each call returns \
at most 2,000 lines or 64 KiB (or, with max_tokens, what fits that many tokens), and `next` is the \
pointer to the following range. Use memory_grep \
for the lines of one memory that match a pattern (like `grep -n`), memory_query to run a jq program \
on a JSON memory, and memory_search to find which memories hold a term.";

/// The tool set of one MCP request (stateless: built per request).
#[derive(Clone)]
pub struct CairnTools {
    state: AppState,
    tool_router: ToolRouter<Self>,
}

impl CairnTools {
    /// The tools over the application's state.
    pub fn new(state: AppState) -> Self {
        Self {
            state,
            tool_router: Self::tool_router(),
        }
    }
}

#[tool_router]
impl CairnTools {
    /// Stores content and answers its pointer and summary.
    #[tool(
        name = "memory_put",
        description = "Store a large text (tool output, web page, log, file listing) in Cairn and get back \
a short summary, its line/byte/token counts and a `uri` pointer (mem://<id>). Keep the summary and the \
uri in context instead of the content; read any part later with memory_fetch. Storing the same content \
again returns the same memory."
    )]
    async fn memory_put(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(args): Parameters<PutArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = caller(&parts)?;
        Ok(answer(self.put(&caller, args).await))
    }

    /// Reads a line or byte range of a memory.
    #[tool(
        name = "memory_fetch",
        description = "Read part of a stored memory: give `memory_id` or a `uri` (mem://<id>, mem://<id>#L<a>-<b>, \
or the `next` of a previous answer), and either `line_start`/`line_end` (1-based, inclusive) or \
`byte_offset`/`byte_length`. Each call returns at most 2,000 lines and 64 KiB; `total_lines` tells the \
size, `truncated` says the byte cap cut the range short, and `next` is the pointer to the following \
range (null at the end). To page through a large memory, fetch 200-500 lines at a time and follow `next`; \
when lines can be very long (minified JSON, one-line logs) or your context is tight, give `max_tokens` \
instead: you get the whole lines from the start that fit that many tokens (a longer line is cut and \
`next` continues inside it), with their `tokens` count. Use memory_grep or memory_search first to find \
the lines that matter."
    )]
    async fn memory_fetch(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(args): Parameters<FetchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = caller(&parts)?;
        Ok(answer(fetch(&self.state, &caller, args).await))
    }

    /// Full-text search over the caller's memories.
    #[tool(
        name = "memory_search",
        description = "Search the stored memories (BM25 over their full content). Answers memory ids, titles and \
the matching lines with their line numbers, best first; fetch around a hit with memory_fetch \
(e.g. line_start = line - 20). Query syntax: words (all must match), \"a phrase\", prefix*, AND, OR, NOT."
    )]
    async fn memory_search(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(args): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = caller(&parts)?;
        Ok(answer(search(&self.state, caller, args).await))
    }

    /// `grep -n` inside one memory.
    #[tool(
        name = "memory_grep",
        description = "Find the lines of one stored memory that match a pattern, like `grep -n -C`: give \
`memory_id` or `uri` and a `pattern` (a regex; `fixed: true` for a literal, `ignore_case` for any case). \
Answers each matching line with its number, up to `context` lines around it, and a `uri` that fetches \
it. Use it when you know what the line looks like (an error message, a test name, a key); use \
memory_search to find which memory holds a term, and memory_fetch to read a range. At most \
`max_matches` per call and a bounded scan: when `truncated`, call again with `after` = `next`."
    )]
    async fn memory_grep(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(args): Parameters<GrepArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = caller(&parts)?;
        Ok(answer(grep(&self.state, &caller, args).await))
    }

    /// A jq program over one memory's JSON.
    #[tool(
        name = "memory_query",
        description = "Run a jq program on one stored memory that holds JSON (a document, or JSON lines: \
each value is an input, as for jq): give `memory_id` or `uri` and `jq`, e.g. \
`.items[] | select(.status == \"failed\") | {id, error}` or `select(.level == \"error\") | .msg`. \
Answers `results` (every output value, in order) and `truncated` when the output caps (1,000 values, \
64 KiB) stopped it. Use it instead of memory_fetch when a memory is JSON and you need some fields of \
it; use memory_grep for text."
    )]
    async fn memory_query(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(args): Parameters<QueryArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = caller(&parts)?;
        Ok(answer(query(&self.state, &caller, args).await))
    }

    /// The caller's namespace totals.
    #[tool(
        name = "memory_stats",
        description = "Totals of your namespace: memories, bytes stored, compression and dedup ratios, \
tokens and cost saved, search index lag."
    )]
    async fn memory_stats(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(_): Parameters<StatsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = caller(&parts)?;
        Ok(answer(stats(&self.state, caller).await))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CairnTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("cairn", env!("CARGO_PKG_VERSION"))
                    .with_title("Cairn memory store"),
            )
            .with_instructions(INSTRUCTIONS)
    }
}

impl CairnTools {
    async fn put(&self, caller: &Caller, args: PutArgs) -> Result<PutView, AppError> {
        let (fields, content) = (args.fields, args.content);
        let content = futures::stream::iter([Ok::<_, Infallible>(Bytes::from(content))]);
        let (memories, ledger) = (&self.state.memories, &self.state.ledger);
        let stored = put::put(memories, ledger, &caller.namespace, fields, content).await?;
        Ok(PutView::new(stored, self.state.memories.limits()))
    }
}

/// `memory_fetch`: a line or byte range of a memory, by id or pointer (also
/// the LLM proxy's own `memory_fetch` tool).
pub(crate) async fn fetch(
    state: &AppState,
    caller: &Caller,
    args: FetchArgs,
) -> Result<SliceView, AppError> {
    let uri = args.into_uri()?;
    let by_lines = !matches!(uri.selector, Selector::Bytes { .. });
    let slice = state.memories.fetch(&caller.namespace, &uri, None).await?;
    Ok(SliceView::new(slice, by_lines))
}

/// `memory_grep`: the matching lines of one memory, by id or pointer.
pub(crate) async fn grep(
    state: &AppState,
    caller: &Caller,
    args: GrepArgs,
) -> Result<GrepView, AppError> {
    let id = pointer(args.memory_id, args.uri, "grep")?.id;
    let query = GrepQuery::new(args.what, args.max_matches, args.after);
    let (id, result) = state.memories.grep(&caller.namespace, &id, &query).await?;
    Ok(GrepView::new(&id, result))
}

/// `memory_query`: a jq program over one memory, by id or pointer.
async fn query(state: &AppState, caller: &Caller, args: QueryArgs) -> Result<QueryView, AppError> {
    let id = pointer(args.memory_id, args.uri, "query")?.id;
    let (id, result) = state
        .memories
        .query(&caller.namespace, &id, &args.jq, &state.jq)
        .await?;
    Ok(QueryView::new(&id, result))
}

/// `memory_search`: full-text search in the caller's namespace (also the LLM proxy's tool).
pub(crate) async fn search(
    state: &AppState,
    caller: Caller,
    args: SearchArgs,
) -> Result<SearchView, AppError> {
    let limit = limit(args.limit, DEFAULT_RESULTS, MAX_RESULTS)?;
    let filter = list_query(args.filter, caller.namespace, limit)?;
    let results = state.search.search(&args.query, filter).await?;
    Ok(results.into())
}

/// `memory_stats`: the figures of the caller's namespace.
async fn stats(state: &AppState, caller: Caller) -> Result<StatsView, AppError> {
    let stats = state.ledger.stats(&caller.namespace).await?;
    let lag = state.search.lag().await?;
    Ok(StatsView::new(caller.namespace, stats, lag))
}

/// The caller that the authentication layer put into the HTTP request.
fn caller(parts: &Parts) -> Result<Caller, ErrorData> {
    parts
        .extensions
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| ErrorData::internal_error("request reached MCP without a caller", None))
}

/// A tool result: the JSON view, or the REST error body flagged as a tool error
/// (so the model reads what was wrong and can correct its call).
fn answer<T: Serialize>(result: Result<T, AppError>) -> CallToolResult {
    match result {
        Ok(view) => match serde_json::to_value(view) {
            Ok(value) => CallToolResult::structured(value),
            Err(e) => CallToolResult::structured_error(AppError::internal_value(&e)),
        },
        Err(err) => CallToolResult::structured_error(err.into_body()),
    }
}
