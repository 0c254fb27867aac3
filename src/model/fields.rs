//! The descriptive fields of a stored memory, validated: what the stores
//! keep and what every answer that shows a memory shows of them.

use serde::Serialize;

/// The descriptive fields of a memory, as given at put (validated).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct MemoryFields {
    /// TOOL_OUTPUT, WEB_SCRAPE, FILE_LIST, TRANSCRIPT, SUMMARY, CONTEXT, DOCUMENT, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// Usually the tool name.
    pub subtype: Option<String>,
    /// Media type.
    pub mime: String,
    /// Title.
    pub title: Option<String>,
    /// Tags, sorted.
    pub tags: Vec<String>,
    /// Thread or session link.
    pub thread: Option<String>,
    /// Checkpoint link.
    pub checkpoint: Option<String>,
    /// Directory link.
    pub directory: Option<String>,
    /// Never pruned nor expired.
    pub pinned: bool,
    /// Seconds to live from the put (only as given at put; stored as `expires_at`).
    #[serde(skip)]
    pub ttl_seconds: Option<u64>,
}
