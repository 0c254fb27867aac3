//! Rows of the full-text index: what the indexer writes and what a search reads.

use super::records::MemoryRecord;

/// An object waiting to be indexed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingObject {
    /// Content hash.
    pub hash: String,
    /// Content length.
    pub bytes: u64,
}

/// The text of one frame, as indexed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedFrame {
    /// Frame index in the object (0 for raw content).
    pub idx: u32,
    /// The frame's text (with the rest of its last line).
    pub text: String,
    /// How the frame's lines stand in `text` (what lets a grep skip it).
    pub lines: FrameLines,
}

/// How a frame's lines stand in its indexed text. `whole_lines` false (the
/// default) keeps a grep reading the frame; `starts_line` false tells a grep
/// that jumps to the frame to begin after its first newline, so it must be
/// true whenever a line begins at the frame's first byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameLines {
    /// The frame's first byte begins a line (the first frame, or the one
    /// before ends with a newline).
    pub starts_line: bool,
    /// Every line that begins in the frame is whole in the text (its last
    /// line ended within the text taken from the next frame, or in the frame).
    pub whole_lines: bool,
}

/// What the index knows of one frame for a grep: see [`SearchIndex::frame_words`].
///
/// [`SearchIndex::frame_words`]: super::SearchIndex::frame_words
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameWords {
    /// Frame index in the object.
    pub idx: u32,
    /// Its indexed text holds every word asked for.
    pub holds_words: bool,
    /// How its lines stand in that text.
    pub lines: FrameLines,
}

/// Frames of one object to add to the index; `done` ends the object's indexing.
#[derive(Clone, Debug, Default)]
pub struct FrameBatch {
    /// Content hash.
    pub hash: String,
    /// Frames to add (a frame already indexed is skipped).
    pub frames: Vec<IndexedFrame>,
    /// True on the object's first batch: whatever an earlier try at the
    /// object left in the index goes first.
    pub first: bool,
    /// True on the object's last batch: it leaves the pending queue.
    pub done: bool,
}

#[cfg(test)]
impl FrameBatch {
    /// The whole of object `hash` (`first` and `done`), its frames holding `texts` in order.
    pub fn whole<T: AsRef<str>>(hash: &str, texts: &[T]) -> Self {
        Self {
            hash: hash.to_owned(),
            frames: texts
                .iter()
                .enumerate()
                .map(|(i, text)| IndexedFrame {
                    idx: u32::try_from(i).unwrap_or(u32::MAX),
                    text: text.as_ref().to_owned(),
                    lines: FrameLines::default(),
                })
                .collect(),
            first: true,
            done: true,
        }
    }
}

/// Objects (and their content bytes) not indexed yet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexLag {
    /// Objects waiting.
    pub objects: u64,
    /// Their content bytes.
    pub bytes: u64,
}

/// A memory that matches a search, with its matching frames.
#[derive(Clone, Debug)]
pub struct SearchRow {
    /// The memory.
    pub record: MemoryRecord,
    /// BM25 score of its best frame (lower is better, as SQLite's `bm25()`).
    pub score: f64,
    /// Indexes of its matching frames, best first.
    pub frames: Vec<u32>,
}
