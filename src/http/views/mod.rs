//! JSON shapes of answers, built from domain values.

use base64::Engine;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::memories::grep::across::AcrossResult;
use crate::domain::memories::grep::{GrepMatch, GrepResult};
use crate::domain::memories::ids::MemoryId;
use crate::domain::memories::jq::JqResult;
use crate::domain::memories::read::slicing::{Slice, SliceLimits, byte_uri, line_uri};
use crate::model::MemoryFields;
use crate::storage::meta::MemoryRecord;

mod search;
mod stats;

pub use search::{HitView, SearchResultView, SearchView};
pub use stats::{
    BudgetView, CalibrationView, GovernorTiersView, ModelCalibrationView, PromptCacheView,
    PutsView, SavedView, SearchIndexView, StatsView, UsageStatsView, UsageTotalsView,
};

/// A memory's metadata and summary (never its content).
#[derive(Serialize, ToSchema)]
pub struct MemoryView {
    /// SHA-256 of the content.
    pub id: String,
    /// Pointer to keep in context: `mem://<id>`.
    pub uri: String,
    /// What was said of the content at put.
    #[serde(flatten)]
    pub fields: MemoryFields,
    /// Content length in bytes.
    pub bytes: u64,
    /// Bytes the content takes in storage (compressed).
    pub stored_bytes: u64,
    /// Lines of content.
    pub lines: u64,
    /// Tokens of the content.
    pub tokens: u64,
    /// How `tokens` was counted.
    pub token_method: String,
    /// True while `tokens` is the bytes/4 estimate of a put that answered
    /// before its exact count: the content is over
    /// `CAIRN_EXACT_TOKENS_AFTER_BYTES`, and its exact count, under way,
    /// replaces the estimate (and the summary's figure) moments later. A
    /// count a stopped server left unmade is made when it starts again.
    pub tokens_settling: bool,
    /// Chunks of the content (`/chunks/{n}`, n from 0).
    pub chunks: u64,
    /// Deterministic summary by detected kind (json, html, test-output, log, listing, stack-trace, text, binary), with line, byte and token counts and the pointer.
    pub summary: String,
    /// Creation time (RFC 3339).
    pub created_at: String,
    /// Time of the latest put of this content (RFC 3339).
    pub updated_at: String,
    /// Time of the latest read, if any (RFC 3339; recorded in batches, about a second late).
    pub last_accessed_at: Option<String>,
    /// Reads so far (recorded in batches).
    pub access_count: i64,
    /// When it expires (RFC 3339); null: never.
    pub expires_at: Option<String>,
    /// Set when `verify` found its object corrupt: reads answer `integrity_error`.
    pub corrupt: Option<String>,
}

impl MemoryView {
    /// The view of a record.
    pub fn new(record: MemoryRecord, limits: &SliceLimits) -> Self {
        Self {
            uri: format!("mem://{}", record.id),
            chunks: limits.chunk_count(record.bytes),
            id: record.id,
            fields: record.fields,
            bytes: record.bytes,
            stored_bytes: record.stored_bytes,
            lines: record.lines,
            tokens: record.tokens,
            token_method: record.token_method,
            tokens_settling: record.tokens_settling,
            summary: record.summary,
            created_at: rfc3339(record.created_at),
            updated_at: rfc3339(record.updated_at),
            last_accessed_at: record.last_accessed_at.map(rfc3339),
            access_count: record.access_count,
            expires_at: record.expires_at.map(rfc3339),
            corrupt: record.corrupt,
        }
    }
}

/// The answer to a put.
#[derive(Serialize, ToSchema)]
pub struct PutView {
    /// The stored memory.
    #[serde(flatten)]
    pub memory: MemoryView,
    /// True when this namespace already had this content (answered 200, not 201).
    pub deduplicated: bool,
    /// Tokens saved by keeping the summary and pointer instead of the content.
    pub tokens_saved: u64,
    /// Secrets replaced by `[REDACTED:<kind>]` before the content was stored.
    pub redacted: RedactedView,
}

impl PutView {
    /// The answer to a put that stored `stored`.
    pub fn new(stored: crate::domain::memories::Stored, limits: &SliceLimits) -> Self {
        Self {
            redacted: RedactedView::new(stored.redacted.as_ref()),
            memory: MemoryView::new(stored.record, limits),
            deduplicated: stored.deduplicated,
            tokens_saved: stored.tokens_saved,
        }
    }
}

/// What redaction replaced in a put's content.
#[derive(Serialize, ToSchema)]
pub struct RedactedView {
    /// Secrets replaced.
    pub total: u64,
    /// Secrets replaced, by kind (`private_key`, `aws_access_key_id`, `github_token`, `jwt`, `url_password`, `generic_secret`, ...).
    pub kinds: std::collections::BTreeMap<String, u64>,
    /// False when the content was not scanned: redaction is off (`CAIRN_REDACT=false`)
    /// or the media type is binary (image/*, audio/*, video/*, application/octet-stream, archives, PDF).
    pub scanned: bool,
}

impl RedactedView {
    /// The view of a put's redaction report (`None`: not scanned).
    pub fn new(report: Option<&crate::domain::redact::Report>) -> Self {
        Self {
            total: report.map_or(0, |r| r.total),
            kinds: report
                .map(|r| {
                    r.kinds
                        .iter()
                        .map(|(kind, n)| (kind.as_str().to_owned(), *n))
                        .collect()
                })
                .unwrap_or_default(),
            scanned: report.is_some(),
        }
    }
}

/// A page of memories.
#[derive(Serialize, ToSchema)]
pub struct ListView {
    /// Newest first.
    pub memories: Vec<MemoryView>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A slice of content: lines, bytes or a chunk.
#[derive(Serialize, ToSchema)]
pub struct SliceView {
    /// The memory.
    pub id: String,
    /// Pointer to exactly this slice.
    pub uri: String,
    /// First line (for byte slices: the line of the first byte).
    pub start: u64,
    /// Last line included (for byte slices: the line of the last byte).
    pub end: u64,
    /// Content offset of the first byte.
    pub offset: u64,
    /// Bytes in this slice.
    pub length: u64,
    /// Lines in the whole memory.
    pub total_lines: u64,
    /// Bytes in the whole memory.
    pub total_bytes: u64,
    /// The slice as text (invalid UTF-8 replaced by U+FFFD; see `text_base64`).
    pub text: String,
    /// The exact bytes, base64, present only when they are not valid UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_base64: Option<String>,
    /// True when the byte cap cut the requested lines short; `next` continues.
    pub truncated: bool,
    /// Pointer to the range that follows; null at the end.
    pub next: Option<String>,
    /// For chunks: this chunk's index (from 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<u64>,
    /// For chunks: how many chunks the memory has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<u64>,
    /// With `max_tokens`: tokens of this slice's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// With `max_tokens`: how `tokens` was counted (`exact:o200k_base`, or a labelled estimate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

impl SliceView {
    /// The view of a line slice (`lines: true`) or a byte/chunk slice.
    pub fn new(slice: Slice, lines: bool) -> Self {
        let length = slice.content.len() as u64;
        let lines = slice.tokens.as_ref().map_or(lines, |t| t.whole_lines);
        let uri = if lines {
            line_uri(&slice.id, slice.start, slice.end)
        } else {
            byte_uri(&slice.id, slice.offset, length)
        };
        let (text, text_base64) = match std::str::from_utf8(&slice.content) {
            Ok(text) => (text.to_owned(), None),
            Err(_) => (
                String::from_utf8_lossy(&slice.content).into_owned(),
                Some(base64::engine::general_purpose::STANDARD.encode(&slice.content)),
            ),
        };
        Self {
            id: slice.id.to_string(),
            uri,
            start: slice.start,
            end: slice.end,
            offset: slice.offset,
            length,
            total_lines: slice.total_lines,
            total_bytes: slice.total_bytes,
            text,
            text_base64,
            truncated: slice.truncated,
            next: slice.next,
            chunk: slice.chunk.map(|(n, _)| n),
            chunks: slice.chunk.map(|(_, count)| count),
            tokens: slice.tokens.as_ref().map(|t| t.count),
            method: slice.tokens.map(|t| t.method),
        }
    }
}

/// Unix milliseconds as RFC 3339 UTC.
pub fn rfc3339(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Raw bytes in a body (content, a tar archive): documented as a binary
/// string, so generated clients send and take files, not arrays of numbers.
pub struct Binary;

impl utoipa::PartialSchema for Binary {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .description(Some("Raw bytes"))
            .into()
    }
}

impl ToSchema for Binary {}

/// One matching line.
#[derive(Serialize, ToSchema)]
pub struct GrepMatchView {
    /// Line number (1-based, as `/lines` and `grep -n` count).
    pub line: u64,
    /// The line (at most 2,048 bytes; a final `\r` dropped).
    pub text: String,
    /// The line is longer than shown: fetch it with `uri`.
    pub cut: bool,
    /// Pointer to this line: `mem://<id>#L<n>-<n>`.
    pub uri: String,
    /// Up to `context` lines before it, in order.
    pub before: Vec<String>,
    /// Up to `context` lines after it, in order.
    pub after: Vec<String>,
}

/// Matching lines of a memory.
#[derive(Serialize, ToSchema)]
pub struct GrepView {
    /// The memory.
    pub id: String,
    /// Matching lines in order.
    pub matches: Vec<GrepMatchView>,
    /// Content bytes read to answer.
    pub scanned_bytes: u64,
    /// Content bytes not read because the full-text index showed that no
    /// line there can match (the pattern's whole words are missing from them).
    pub skipped_bytes: u64,
    /// True when the answer stopped early (at `max_matches`, or at the per-request scan cap).
    pub truncated: bool,
    /// The `after` value that continues the search; null when the content is exhausted.
    pub next: Option<u64>,
}

impl GrepView {
    /// The view of `result`, a grep of memory `id`.
    pub fn new(id: &MemoryId, result: GrepResult) -> Self {
        Self {
            id: id.to_string(),
            matches: GrepMatchView::all(id, result.matches),
            scanned_bytes: result.scanned_bytes,
            skipped_bytes: result.skipped_bytes,
            truncated: result.truncated,
            next: result.next,
        }
    }
}

impl GrepMatchView {
    /// The views of the matches of memory `id`.
    fn all(id: &MemoryId, matches: Vec<GrepMatch>) -> Vec<Self> {
        matches
            .into_iter()
            .map(|m| Self {
                uri: line_uri(id, m.line, m.line),
                line: m.line,
                text: m.text,
                cut: m.cut,
                before: m.before,
                after: m.after,
            })
            .collect()
    }
}

/// The matches of one memory in a grep across memories.
#[derive(Serialize, ToSchema)]
pub struct MemoryGrepView {
    /// The memory.
    pub id: String,
    /// Pointer to it: `mem://<id>`.
    pub uri: String,
    /// Its title.
    pub title: Option<String>,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its subtype.
    pub subtype: Option<String>,
    /// Its matching lines in order.
    pub matches: Vec<GrepMatchView>,
}

/// Matching lines across the memories a filter selects.
#[derive(Serialize, ToSchema)]
pub struct AcrossGrepView {
    /// Memories with matches, newest first.
    pub results: Vec<MemoryGrepView>,
    /// Memories searched, wholly or in part.
    pub searched: u32,
    /// Content bytes read to answer.
    pub scanned_bytes: u64,
    /// Content bytes not read because the full-text index showed that no
    /// line there can match (the pattern's whole words are missing from them).
    pub skipped_bytes: u64,
    /// True when memories (or the rest of one) are left: pass `next_cursor` as `cursor`.
    pub truncated: bool,
    /// Where the next answer starts; null when every selected memory was searched.
    pub next_cursor: Option<String>,
}

impl AcrossGrepView {
    /// The view of a grep across memories.
    pub fn new(answer: AcrossResult) -> Self {
        let results = answer
            .memories
            .into_iter()
            .map(|found| {
                let id = MemoryId::from_stored(found.record.id);
                MemoryGrepView {
                    uri: format!("mem://{id}"),
                    matches: GrepMatchView::all(&id, found.result.matches),
                    id: id.to_string(),
                    title: found.record.fields.title,
                    kind: found.record.fields.kind,
                    subtype: found.record.fields.subtype,
                }
            })
            .collect();
        Self {
            results,
            searched: answer.searched,
            scanned_bytes: answer.scanned_bytes,
            skipped_bytes: answer.skipped_bytes,
            truncated: answer.next.is_some(),
            next_cursor: answer.next.map(|cursor| cursor.encode()),
        }
    }
}

/// What a jq program output.
#[derive(Serialize, ToSchema)]
pub struct QueryView {
    /// The memory.
    pub id: String,
    /// Every value the program output, in order (objects keep their key order).
    #[schema(value_type = Vec<Value>)]
    pub results: Vec<Box<serde_json::value::RawValue>>,
    /// True when the output caps (1,000 values, `max_slice_bytes` of JSON) stopped the program.
    pub truncated: bool,
    /// JSON values read from the content (1 for a document, one per line for JSON lines).
    pub inputs: u64,
}

impl QueryView {
    /// The view of a query's result on memory `id`.
    pub fn new(id: &MemoryId, result: JqResult) -> Self {
        Self {
            id: id.to_string(),
            results: result.results,
            truncated: result.truncated,
            inputs: result.inputs,
        }
    }
}
