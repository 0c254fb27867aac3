//! What the metadata store holds and answers: memories, their fields and
//! objects with their frame indexes, and the shapes of a put, an import, a
//! listing and a read count.

use serde::{Deserialize, Serialize};

/// Where an object's bytes live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Layout {
    /// Small content kept as is in the metadata store.
    Raw,
    /// A seekable zstd object kept in the metadata store.
    Inline,
    /// A seekable zstd object in the blob store.
    Blob,
}

impl Layout {
    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Raw => "raw",
            Self::Inline => "inline",
            Self::Blob => "blob",
        }
    }

    /// Parses the stored name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "raw" => Some(Self::Raw),
            "inline" => Some(Self::Inline),
            "blob" => Some(Self::Blob),
            _ => None,
        }
    }
}

/// Content bytes per page: the unit a partial frame read decodes and verifies.
pub const PAGE_BYTES: usize = 64 << 10;

/// One page of a frame's content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageEntry {
    /// CRC-32 of the page's content.
    pub crc32: u32,
    /// Newlines in the page.
    pub newlines: u32,
}

impl PageEntry {
    /// The pages of a frame's content.
    pub fn of(content: &[u8]) -> Vec<Self> {
        content
            .chunks(PAGE_BYTES)
            .map(|page| Self {
                crc32: crc32fast::hash(page),
                newlines: u32::try_from(memchr::memchr_iter(b'\n', page).count())
                    .unwrap_or(u32::MAX),
            })
            .collect()
    }

    /// Pages as stored: 8 bytes each, little-endian CRC then newline count.
    pub fn encode(pages: &[Self]) -> Vec<u8> {
        pages
            .iter()
            .flat_map(|p| {
                p.crc32
                    .to_le_bytes()
                    .into_iter()
                    .chain(p.newlines.to_le_bytes())
            })
            .collect()
    }

    /// Reads pages stored by [`PageEntry::encode`].
    pub fn decode(bytes: &[u8]) -> Vec<Self> {
        bytes
            .chunks_exact(8)
            .map(|c| Self {
                crc32: u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                newlines: u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            })
            .collect()
    }
}

/// One zstd frame of an object: which content it holds and where it is stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameEntry {
    /// Offset of the frame's first byte in the content.
    pub content_offset: u64,
    /// Content bytes in the frame.
    pub content_len: u32,
    /// Line number of the frame's first byte (newlines before it, plus one).
    pub first_line: u64,
    /// Offset of the compressed frame in the stored object.
    pub stored_offset: u64,
    /// Length of the compressed frame.
    pub stored_len: u32,
    /// The frame's pages (empty: the frame is only ever decoded whole).
    pub pages: Vec<PageEntry>,
}

/// An object: the stored form of one content, shared by every memory of it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ObjectRecord {
    /// SHA-256 of the content, hex.
    pub hash: String,
    /// Content length.
    pub bytes: u64,
    /// Number of lines of the content.
    pub lines: u64,
    /// Bytes it takes in storage.
    pub stored_bytes: u64,
    /// Where its bytes live.
    pub layout: Layout,
    /// The content (`Raw`) or the seekable object (`Inline`); `None` for `Blob`.
    pub data: Option<Vec<u8>>,
    /// Frame index (empty for `Raw`).
    pub frames: Vec<FrameEntry>,
}

pub use crate::model::MemoryFields;

/// A memory as stored, joined with its object's sizes.
#[derive(Clone, Debug)]
pub struct MemoryRecord {
    /// Owning namespace.
    pub namespace: String,
    /// Content hash.
    pub id: String,
    /// Descriptive fields.
    pub fields: MemoryFields,
    /// Content length.
    pub bytes: u64,
    /// Stored length.
    pub stored_bytes: u64,
    /// Lines of content.
    pub lines: u64,
    /// Token count of the content.
    pub tokens: u64,
    /// How `tokens` was counted (`exact:o200k_base`, `estimate:bytes/4`).
    pub token_method: String,
    /// True while `tokens` is the estimate of a put that answered before
    /// its exact count, which is under way (or, after a stop, due).
    pub tokens_settling: bool,
    /// Deterministic summary.
    pub summary: String,
    /// Creation time, Unix milliseconds.
    pub created_at: i64,
    /// Last put of the same content, Unix milliseconds.
    pub updated_at: i64,
    /// Last read, Unix milliseconds.
    pub last_accessed_at: Option<i64>,
    /// Number of reads.
    pub access_count: i64,
    /// When it expires, Unix milliseconds (`None`: never).
    pub expires_at: Option<i64>,
    /// Why `verify` found its object corrupt (then reads answer an integrity error).
    pub corrupt: Option<String>,
}

/// What a put writes: the object (if new) and the memory (or a merge into it).
#[derive(Clone, Debug)]
pub struct NewMemory {
    /// Owning namespace.
    pub namespace: String,
    /// Descriptive fields.
    pub fields: MemoryFields,
    /// Token count of the content.
    pub tokens: u64,
    /// How `tokens` was counted.
    pub token_method: String,
    /// True when `tokens` is an estimate whose exact count follows (kept
    /// by a new memory only: a merge leaves the memory's own mark).
    pub tokens_settling: bool,
    /// Deterministic summary.
    pub summary: String,
    /// Time of the put, Unix milliseconds.
    pub now: i64,
    /// The object; its hash is the memory id.
    pub object: ObjectRecord,
}

/// An archived memory to restore as it was (export/import).
#[derive(Clone, Debug)]
pub struct ImportedMemory {
    /// Namespace to restore into.
    pub namespace: String,
    /// Descriptive fields.
    pub fields: MemoryFields,
    /// Token count of the content.
    pub tokens: u64,
    /// How `tokens` was counted.
    pub token_method: String,
    /// The archived summary.
    pub summary: String,
    /// Original creation time, Unix milliseconds.
    pub created_at: i64,
    /// Original last put, Unix milliseconds.
    pub updated_at: i64,
    /// Original last read, Unix milliseconds.
    pub last_accessed_at: Option<i64>,
    /// Original number of reads.
    pub access_count: i64,
    /// Original expiry, Unix milliseconds (`None`: never).
    pub expires_at: Option<i64>,
    /// The object, freshly ingested; its hash is the memory id.
    pub object: ObjectRecord,
}

impl ImportedMemory {
    /// The put that stores its object and creates the memory (at its
    /// original creation time); the rest of the archive is set after.
    pub fn as_put(&self) -> NewMemory {
        NewMemory {
            namespace: self.namespace.clone(),
            fields: self.fields.clone(),
            tokens: self.tokens,
            token_method: self.token_method.clone(),
            tokens_settling: false,
            summary: self.summary.clone(),
            now: self.created_at,
            object: self.object.clone(),
        }
    }
}

/// A memory's exact token count, found after its put was answered with the
/// estimate, and its summary restated with it.
#[derive(Clone, Debug)]
pub struct SettledTokens {
    /// The memory's namespace.
    pub namespace: String,
    /// The memory's id.
    pub id: String,
    /// How the put counted (the estimate's method): a memory counted
    /// otherwise since is left as it is.
    pub estimated_method: String,
    /// The exact count.
    pub tokens: u64,
    /// How it was counted.
    pub token_method: String,
    /// The summary stating it.
    pub summary: String,
}

/// Result of a put at the metadata level.
#[derive(Clone, Debug)]
pub struct PutOutcome {
    /// True when the memory did not exist in the namespace before.
    pub created: bool,
    /// True when the object (shared by namespaces) was stored by this put.
    pub object_created: bool,
    /// The memory after the put.
    pub record: MemoryRecord,
}

/// Filters and page of a listing.
#[derive(Clone, Debug, Default)]
pub struct ListQuery {
    /// Namespace to list.
    pub namespace: String,
    /// Exact type.
    pub kind: Option<String>,
    /// Exact subtype.
    pub subtype: Option<String>,
    /// Memories carrying this tag.
    pub tag: Option<String>,
    /// Exact thread.
    pub thread: Option<String>,
    /// Exact checkpoint.
    pub checkpoint: Option<String>,
    /// Exact directory.
    pub directory: Option<String>,
    /// Created at or after (Unix ms).
    pub since: Option<i64>,
    /// Created before (Unix ms).
    pub until: Option<i64>,
    /// Continue after this (created_at, id).
    pub after: Option<(i64, String)>,
    /// Page size.
    pub limit: u32,
}

/// Reads to add to a memory's access statistics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessUpdate {
    /// Namespace of the memory.
    pub namespace: String,
    /// Memory id.
    pub id: String,
    /// Time of the latest read, Unix milliseconds.
    pub at: i64,
    /// Reads since the last flush.
    pub count: i64,
}

/// A lock on one object held across every process that shares the store:
/// puts and GC of other replicas wait for it. Released when dropped.
pub struct ObjectLease {
    _held: Box<dyn Send + Sync>,
}

impl ObjectLease {
    /// A lease that lasts as long as `held` does (its `Drop` releases the lock).
    pub fn new(held: impl Send + Sync + 'static) -> Self {
        Self {
            _held: Box::new(held),
        }
    }
}
