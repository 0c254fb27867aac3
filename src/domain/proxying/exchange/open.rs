//! Opening an exchange: the client's request kept for its record, rewritten
//! (offload, govern), Cairn's tools added where the conversation may need
//! them, a stream asked for its usage, and the record begun. The client's
//! bytes stay as they were outside what changed.

use std::time::Instant;

use serde_json::Value;

use super::Request;
use super::record::{self, Client};
use crate::domain::DomainError;
use crate::domain::proxying::Endpoint;
use crate::domain::proxying::exchanges::{ExchangeLedger, Trace};
use crate::domain::proxying::first_offload::json_bytes;
use crate::domain::proxying::rewrite::Rewriter;
use crate::domain::proxying::spliced::Spliced;
use crate::domain::proxying::wire;

/// One of Cairn's tools as a request offers it to the model.
#[derive(Clone, Debug)]
pub struct ToolDefinition {
    /// Its name (`memory_fetch`, ...).
    pub name: &'static str,
    /// What the model is told it does.
    pub description: &'static str,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
}

/// What opening an exchange needs.
pub struct Opening<'a> {
    /// The rewrite (offload, govern).
    pub rewriter: Rewriter<'a>,
    /// The record of exchanges.
    pub exchanges: &'a ExchangeLedger,
    /// The caller's namespace.
    pub namespace: &'a str,
    /// The API called.
    pub endpoint: Endpoint,
    /// The thread the client named (`X-Cairn-Thread`), if any.
    pub thread: Option<&'a str>,
    /// The session a client's own header names, if any.
    pub session: Option<&'a str>,
    /// Cairn's tools, in the order they are offered.
    pub tools: &'a [ToolDefinition],
}

/// An exchange ready for its first round.
pub struct Opened {
    /// What it is about.
    pub request: Request,
    /// The client asked for a stream.
    pub streamed: bool,
    /// The client asked for usage in its stream itself.
    pub wants_usage: bool,
    /// Its record, begun (`None` while the ledger records nothing).
    pub trace: Option<Trace>,
}

/// Opens the exchange of `body` (rewritten in place), which arrived at `started`.
pub async fn open(
    o: Opening<'_>,
    body: &mut Spliced,
    started: Instant,
) -> Result<Opened, DomainError> {
    let mut client = Client::of(o.exchanges, body, o.thread.or(o.session));
    let mut value = body.value().clone();
    let new_tools_bytes = new_tools_bytes(
        o.endpoint,
        &value,
        o.tools,
        o.rewriter.settings.tools_for_agents,
    );
    let report = o
        .rewriter
        .rewrite(
            o.namespace,
            o.endpoint,
            &mut value,
            o.thread.map(str::to_owned),
            o.session,
            new_tools_bytes,
        )
        .await?;
    let ours = if wire::wants_tools(&value, o.rewriter.settings.tools_for_agents) {
        add(o.endpoint, &mut value, o.tools)
    } else {
        Vec::new()
    };
    let original = body
        .swap(value)
        .map_err(|e| DomainError::Internal(e.to_string()))?;
    client.keep_value(original);
    let span = tracing::Span::current();
    span.record("tokens_before", report.tokens_before);
    span.record("tokens_after", report.tokens_after);
    let provider = o.endpoint.provider();
    if let Some(reason) = report.skip_reason() {
        o.rewriter
            .ledger
            .metrics()
            .proxy
            .skipped
            .with_label_values(&[provider.name(), reason])
            .inc();
    }
    let model = body.value()["model"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let streamed = body.value()["stream"] == Value::Bool(true);
    let wants_usage = streamed && wire::of(o.endpoint).ask_usage(body)?;
    // From here on the exchange needs the body's bytes; its value only if a
    // retrieval round continues the conversation.
    body.lighten();
    let trace = record::begin(
        o.exchanges,
        o.namespace,
        o.endpoint,
        &model,
        &report,
        &ours,
        client,
        body,
        streamed,
    );
    let request = Request {
        endpoint: o.endpoint,
        namespace: o.namespace.to_owned(),
        report,
        ours,
        model,
        started,
    };
    Ok(Opened {
        request,
        streamed,
        wants_usage,
        trace,
    })
}

/// Bytes of the tools [`add`] would put into `body` once it holds a pointer;
/// 0 when they go up whatever happens (`--proxy-tools agents` and a client
/// with tools of its own) or when the client defines them all.
fn new_tools_bytes(
    endpoint: Endpoint,
    body: &Value,
    tools: &[ToolDefinition],
    agents: bool,
) -> usize {
    if wire::wants_tools(body, agents) {
        return 0;
    }
    missing(body, tools)
        .map(|tool| {
            let offered = wire::of(endpoint).tool(tool.name, tool.description, &tool.parameters);
            json_bytes(&offered) + 1
        })
        .sum()
}

/// Cairn's tools that `body` does not define itself, in order.
fn missing<'t>(
    body: &Value,
    tools: &'t [ToolDefinition],
) -> impl Iterator<Item = &'t ToolDefinition> {
    let defined: Vec<String> = if body.get("tools").is_some_and(|t| !t.is_array()) {
        // Not a list Cairn can add to: it adds nothing.
        tools.iter().map(|t| t.name.to_owned()).collect()
    } else {
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| {
                t["name"]
                    .as_str()
                    .or_else(|| t["function"]["name"].as_str())
                    .map(str::to_owned)
            })
            .collect()
    };
    tools
        .iter()
        .filter(move |tool| !defined.iter().any(|d| d == tool.name))
}

/// Adds Cairn's tools that the request does not define itself; answers the
/// names added (the tools Cairn answers in this exchange). Appended after the
/// client's tools, always in the same order and bytes.
pub fn add(endpoint: Endpoint, body: &mut Value, tools: &[ToolDefinition]) -> Vec<&'static str> {
    let mut added = Vec::new();
    let wanted: Vec<&ToolDefinition> = missing(body, tools).collect();
    for tool in wanted {
        let offered = wire::of(endpoint).tool(tool.name, tool.description, &tool.parameters);
        let Some(object) = body.as_object_mut() else {
            break;
        };
        if let Value::Array(list) = object
            .entry("tools")
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            list.push(offered);
            added.push(tool.name);
        }
    }
    added
}
