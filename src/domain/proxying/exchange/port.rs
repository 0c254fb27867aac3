//! What an exchange needs from outside the domain, as two ports: the
//! upstream provider (one round's request; its answer as a head and a byte
//! stream) and Cairn's own tools (run in the caller's namespace). The HTTP
//! side implements both (`http::proxy`): the HTTP client and the MCP tools'
//! answer shapes stay there.

use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;

use crate::domain::proxying::wire::{ToolCall, ToolResult};

/// One round's answer as far as its head: the status, the headers (opaque
/// here: they go to the client as the upstream's side made them), whether
/// it is an event stream, and its body, read as it comes.
pub struct Reply<H> {
    /// The HTTP status.
    pub status: u16,
    /// The headers that go on to the client.
    pub headers: H,
    /// True for `text/event-stream`.
    pub event_stream: bool,
    /// The body; an error is the connection's failure, with its cause.
    pub body: BoxStream<'static, Result<Bytes, String>>,
}

/// Why the upstream gave no (whole) answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// It could not be reached, or its connection failed: the cause.
    Unreachable(String),
    /// It did not answer within the deadline (`None`: the client's own
    /// timeout fired, without the deadline at hand).
    Timeout(Option<Duration>),
    /// Its answer was larger than Cairn holds in memory (the limit, in bytes).
    TooLarge(usize),
}

impl Fault {
    /// The fault's kind, as the metric of upstream errors names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Unreachable(_) => "unreachable",
            Self::Timeout(_) => "timeout",
            Self::TooLarge(_) => "too_large",
        }
    }

    /// The status a gateway answers for it: 504 for a timeout, else 502.
    pub fn status(&self) -> u16 {
        match self {
            Self::Timeout(_) => 504,
            _ => 502,
        }
    }

    /// The error code the client gets.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unreachable(_) => "upstream_unreachable",
            Self::Timeout(_) => "upstream_timeout",
            Self::TooLarge(_) => "upstream_answer_too_large",
        }
    }

    /// What the client is told.
    pub fn message(&self) -> String {
        match self {
            Self::Unreachable(cause) => {
                format!("the upstream provider could not be reached: {cause}")
            }
            Self::Timeout(Some(deadline)) => format!(
                "the upstream provider did not answer within {} s (CAIRN_PROXY_TIMEOUT_SECS)",
                deadline.as_secs()
            ),
            Self::Timeout(None) => "the upstream provider did not answer in time".to_owned(),
            Self::TooLarge(limit) => {
                format!("the upstream's answer is larger than {limit} bytes (CAIRN_MAX_JSON_BYTES)")
            }
        }
    }
}

/// The upstream provider of one exchange (its URL and headers are the
/// implementation's).
#[async_trait::async_trait]
pub trait Upstream: Send + Sync {
    /// The answer's headers as they go to the client.
    type Headers: Send + 'static;

    /// Sends one round's body; answers the answer's head, its body to come.
    async fn send(&self, body: Bytes) -> Result<Reply<Self::Headers>, Fault>;
}

/// Cairn's tools, in the namespace of the exchange's caller.
#[async_trait::async_trait]
pub trait Tools: Send + Sync {
    /// Runs one of Cairn's calls (an error is the call's answer, never a failure).
    async fn run(&self, call: ToolCall) -> ToolResult;
}
