//! The arguments of each MCP tool, with the JSON Schema a model sees.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::domain::memories::ids::IdRef;
use crate::domain::memories::uri::{MemUri, Selector};
use crate::http::error::AppError;
use crate::model::{GrepPattern, MemoryFilter, PutFields};

/// Arguments of `memory_put`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PutArgs {
    /// The content to store (a tool output, a web page, a log...).
    pub content: String,
    /// What the content is: the same fields as REST's and the CLI's.
    #[serde(flatten)]
    pub fields: PutFields,
}

/// Arguments of `memory_fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchArgs {
    /// The memory's id (64 hex characters, or a unique prefix of at least 12).
    pub memory_id: Option<String>,
    /// A `mem://` pointer, e.g. `mem://<id>#L200-399` or the `next` of a previous fetch.
    pub uri: Option<String>,
    /// First line, 1-based (default 1).
    pub line_start: Option<u64>,
    /// Last line, inclusive (default: 200 lines from line_start; at most 2,000 lines per call).
    pub line_end: Option<u64>,
    /// First byte, from 0 (byte slices instead of lines).
    pub byte_offset: Option<u64>,
    /// Bytes to read (at most 65,536 per call).
    pub byte_length: Option<u64>,
    /// Instead of a line count: return the longest run of whole lines from
    /// the start that fits this many tokens (exact o200k_base count, at least
    /// 16); `next` continues exactly where it stopped.
    pub max_tokens: Option<u64>,
}

impl FetchArgs {
    /// The pointer these arguments name: `memory_id` or `uri`, with the
    /// range and `max_tokens` given beside it; a 400 for contradictions.
    pub fn into_uri(self) -> Result<MemUri, AppError> {
        let lines = self.line_start.is_some() || self.line_end.is_some();
        let bytes = self.byte_offset.is_some() || self.byte_length.is_some();
        if lines && bytes {
            return Err(AppError::bad_request(
                "give either line_start/line_end or byte_offset/byte_length, not both",
            ));
        }
        let mut uri = pointer(self.memory_id, self.uri, "read")?;
        if (lines || bytes) && !matches!(uri.selector, Selector::Whole) {
            return Err(AppError::bad_request(
                "the uri already names a range; drop line_*/byte_* or pass a bare mem://<id>",
            ));
        }
        if bytes {
            uri.selector = Selector::Bytes {
                offset: self.byte_offset.unwrap_or(0),
                len: self.byte_length,
            };
        } else if lines {
            uri.selector = Selector::Lines {
                start: self.line_start.unwrap_or(1),
                end: self.line_end,
            };
        }
        uri.max_tokens = self.max_tokens.or(uri.max_tokens);
        Ok(uri)
    }
}

/// The memory that exactly one of `memory_id` and `uri` names, as a pointer
/// (a bare id names the whole memory); `verb` says what the tool does to it.
pub fn pointer(
    memory_id: Option<String>,
    uri: Option<String>,
    verb: &str,
) -> Result<MemUri, AppError> {
    match (memory_id, uri) {
        (Some(id), None) => Ok(MemUri {
            id: IdRef::parse(&id)?,
            selector: Selector::Whole,
            max_tokens: None,
        }),
        (None, Some(uri)) => Ok(MemUri::parse(&uri)?),
        (Some(_), Some(_)) => Err(AppError::bad_request(format!(
            "give memory_id or uri of the memory to {verb}, not both"
        ))),
        (None, None) => Err(AppError::bad_request(format!(
            "give memory_id or uri (a mem:// pointer) of the memory to {verb}"
        ))),
    }
}

/// Arguments of `memory_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Words (all must match), "a phrase", prefix*, typo~ (a word that may be misspelt), AND, OR, NOT, parentheses.
    pub query: String,
    /// Which memories: the same filter as REST's and the CLI's.
    #[serde(flatten)]
    pub filter: MemoryFilter,
    /// Results, 1-100 (default 10).
    pub limit: Option<u32>,
}

/// Arguments of `memory_grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// The memory's id (64 hex characters, or a unique prefix of at least 12).
    pub memory_id: Option<String>,
    /// Or its `mem://<id>` pointer.
    pub uri: Option<String>,
    /// What to look for: the same pattern and options as REST's and the CLI's.
    #[serde(flatten)]
    pub what: GrepPattern,
    /// Most matches to return, 1-1000 (default 100).
    pub max_matches: Option<u32>,
    /// Start after this line (default 0); pass a previous answer's `next` to continue.
    #[serde(default)]
    pub after: u64,
}

/// Arguments of `memory_query`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryArgs {
    /// The memory's id (64 hex characters, or a unique prefix of at least 12).
    pub memory_id: Option<String>,
    /// Or its `mem://<id>` pointer.
    pub uri: Option<String>,
    /// A jq program, e.g. `.items[] | select(.status == "failed") | {id, error}`.
    pub jq: String,
}

/// Arguments of `memory_stats` (none).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatsArgs {}
