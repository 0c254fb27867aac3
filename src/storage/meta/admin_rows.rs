//! Rows of the retention, GC and verify queries.

use super::records::Layout;

/// The order in which a prune removes memories (first removed first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PruneOrder {
    /// Oldest creation first.
    Oldest,
    /// Fewest reads first, then the longest unread (never read counts from creation).
    LeastAccessed,
}

/// A memory as a prune sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetentionRow {
    /// Memory id.
    pub id: String,
    /// Content length.
    pub bytes: u64,
    /// Creation time, Unix ms.
    pub created_at: i64,
    /// Last read, Unix ms.
    pub last_accessed_at: Option<i64>,
    /// Reads.
    pub access_count: i64,
    /// Never pruned.
    pub pinned: bool,
}

/// An object no memory refers to.
#[derive(Clone, Debug)]
pub struct UnreferencedObject {
    /// Content hash.
    pub hash: String,
    /// Where its bytes live.
    pub layout: Layout,
    /// Bytes it takes in storage.
    pub stored_bytes: u64,
    /// Since when nothing refers to it (the later of its creation and its last release), Unix ms.
    pub idle_since: i64,
}

/// An object row, without its frames.
#[derive(Clone, Debug)]
pub struct ObjectSummary {
    /// Content hash.
    pub hash: String,
    /// Where its bytes live.
    pub layout: Layout,
    /// Bytes it takes in storage.
    pub stored_bytes: u64,
}
