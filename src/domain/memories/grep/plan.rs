//! Which frames a grep reads: all of them, unless the full-text index shows
//! that a frame's lines cannot match (its text lacks a word every matching
//! line holds, and every line beginning in it is whole in that text).
//!
//! A line belongs to the frame it begins in. A skipped frame's lines are
//! ruled out; a line crossing into the next frame is ruled out with it,
//! so reading resumes at the first line beginning in the next frame read —
//! at its first byte when the index says a line begins there, else after
//! its first newline. Around each frame read for its own sake, enough
//! frames before it are read for `context` lines; lines after a match, and
//! the rest of a line begun in a frame read, are read as the scan needs them.

use crate::domain::memories::read::ObjectReader;
use crate::storage::meta::FrameWords;

/// The frames to read, in order, and what the index says of each frame.
#[derive(Debug)]
pub struct Plan {
    frames: Vec<usize>,
    known: Vec<Option<FrameWords>>,
}

impl Plan {
    /// The frames of `reader`'s object to read from frame `first` on, given
    /// what the index knows (`None`: nothing, so every frame is read).
    pub fn new(
        reader: &ObjectReader,
        first: usize,
        context: u32,
        known: Option<&[FrameWords]>,
    ) -> Self {
        let count = reader.frame_count();
        let mut info: Vec<Option<FrameWords>> = vec![None; count];
        for frame in known.unwrap_or_default() {
            if let Some(slot) = info.get_mut(frame.idx as usize) {
                *slot = Some(*frame);
            }
        }
        let ruled_out = |k: usize| info[k].is_some_and(|f| f.lines.whole_lines && !f.holds_words);
        let mut read: Vec<bool> = (0..count).map(|k| k >= first && !ruled_out(k)).collect();
        let line = |k: usize| reader.frame_entry(k).map_or(0, |f| f.first_line);
        if context > 0 {
            // Frames before a frame read, up to `context` whole lines (and
            // the newline ending the partial line a jump skips).
            let wanted: Vec<usize> = (first + 1..count).filter(|&k| read[k]).collect();
            for k in wanted {
                let mut j = k;
                while j > first && line(k) - line(j) <= u64::from(context) {
                    j -= 1;
                    read[j] = true;
                }
            }
        }
        // Where the index does not know whether a line begins at a frame's
        // first byte, reading starts one frame earlier (which it knows).
        for k in first + 1..count {
            if read[k] && !read[k - 1] && info[k].is_none() {
                read[k - 1] = true;
            }
        }
        Self {
            frames: (first..count).filter(|&k| read[k]).collect(),
            known: info,
        }
    }

    /// The frames to read, ascending.
    pub fn frames(&self) -> &[usize] {
        &self.frames
    }

    /// Whether a line begins at frame `idx`'s first byte, if the index knows.
    pub fn starts_line(&self, idx: usize) -> Option<bool> {
        self.known
            .get(idx)
            .copied()
            .flatten()
            .map(|f| f.lines.starts_line)
    }
}
