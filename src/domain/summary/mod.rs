//! Deterministic summaries by detected kind (JSON, HTML, logs and test output,
//! file listings, stack traces, plain text), built while content streams in.
//!
//! Every frame gets a cheap scan ([`scan_frame`], SIMD substring search); the
//! builder keeps bounded material (a prefix whose size depends on what the
//! head looks like, the tail, a few numbered lines per level), and the
//! kind-specific work runs once at [`SummaryBuilder::finish`] on that
//! material. Memory stays bounded whatever the size of the content, and the
//! result does not depend on how the content was cut into frames.

mod detect;
mod generic;
mod html;
pub mod jobs;
mod json;
mod line_stats;
mod listing;
mod logs;
mod render;
mod scan;
mod signal;
mod trace;

pub use detect::Kind;
pub use render::restate_tokens;
pub use scan::{FrameScan, scan_frame};

use line_stats::LineStats;
use render::Doc;
use scan::LineStitcher;

/// Default cap on a summary, in characters.
pub const SUMMARY_CHARS: usize = 800;
/// Bytes of the head that decide the kind (and how much prefix to keep).
pub const HEAD_KEEP: usize = 8 << 10;
/// Material up to this size is summarized right on the async worker.
const INLINE_FINISH_MAX: usize = 64 << 10;
/// Bytes kept from the end of the content.
const TAIL_KEEP: usize = 8 << 10;

/// What a summary states besides the content: its counts and its pointer.
#[derive(Clone, Debug, Default)]
pub struct SummaryFacts {
    /// The pointer, `mem://<id>`.
    pub uri: String,
    /// Media type the client gave (helps detection).
    pub mime: String,
    /// Content length in bytes.
    pub bytes: u64,
    /// Lines of content.
    pub lines: u64,
    /// Tokens of the content.
    pub tokens: u64,
    /// How `tokens` was counted.
    pub token_method: String,
}

/// The summary of content held in memory; the same as streaming it through
/// a [`SummaryBuilder`] in frames of any size.
pub fn summarize(content: &[u8], facts: &SummaryFacts, max_chars: usize) -> String {
    let mut builder = SummaryBuilder::default();
    builder.add_frame(content, &scan_frame(content), 1);
    builder.finish(facts, max_chars)
}

/// Accumulates what the summary needs, frame by frame, in content order.
#[derive(Debug, Default)]
pub struct SummaryBuilder {
    lines: LineStitcher,
    /// The first bytes of the content: [`HEAD_KEEP`], then up to `prefix_limit`.
    prefix: Vec<u8>,
    /// How much prefix to keep, decided once the head is complete.
    prefix_limit: usize,
    tail: Vec<u8>,
    seen: u64,
}

impl SummaryBuilder {
    /// Adds the next frame; `first_line` is the line number of its first byte.
    pub fn add_frame(&mut self, frame: &[u8], scan: &FrameScan, first_line: u64) {
        self.seen += frame.len() as u64;
        let mut rest = frame;
        if self.prefix.len() < HEAD_KEEP {
            let take = (HEAD_KEEP - self.prefix.len()).min(rest.len());
            self.prefix.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.prefix.len() == HEAD_KEEP {
                self.prefix_limit = detect::prefix_keep(&self.prefix);
            }
        }
        if self.prefix.len() < self.prefix_limit {
            let take = (self.prefix_limit - self.prefix.len()).min(rest.len());
            self.prefix.extend_from_slice(&rest[..take]);
        }
        if frame.len() >= TAIL_KEEP {
            self.tail.clear();
            self.tail
                .extend_from_slice(&frame[frame.len() - TAIL_KEEP..]);
        } else {
            self.tail.extend_from_slice(frame);
            let excess = self.tail.len().saturating_sub(TAIL_KEEP);
            self.tail.drain(..excess);
        }
        self.lines.add(scan, first_line);
    }

    /// The summary, at most `max_chars` characters.
    pub fn finish(&self, facts: &SummaryFacts, max_chars: usize) -> String {
        let material = self.material(facts);
        let kind = detect::detect(&facts.mime, &material);
        let mut doc = Doc::new(kind, facts);
        match kind {
            Kind::Json => json::summarize(&material, &mut doc, max_chars),
            Kind::Html => html::summarize(&material, &mut doc, max_chars),
            Kind::TestOutput | Kind::Log | Kind::Build => {
                logs::summarize(&material, &mut doc, kind)
            }
            Kind::Listing => listing::summarize(&material, &mut doc, max_chars),
            Kind::Trace => trace::summarize(&material, &mut doc, max_chars),
            Kind::Text => generic::summarize(&material, &mut doc, max_chars),
            Kind::Binary => {}
        }
        doc.render(max_chars)
    }

    /// [`finish`](Self::finish), plus an [`excerpt`](Self::excerpt) of
    /// `excerpt_bytes` if asked; on the blocking pool when the material is
    /// large (a JSON or HTML prefix takes milliseconds to walk).
    pub async fn finish_off_executor(
        self,
        facts: SummaryFacts,
        max_chars: usize,
        excerpt_bytes: Option<usize>,
    ) -> std::io::Result<(String, Option<String>)> {
        let inline = self.prefix.len() <= INLINE_FINISH_MAX;
        let work = move || {
            let summary = self.finish(&facts, max_chars);
            (summary, excerpt_bytes.map(|n| self.excerpt(n)))
        };
        if inline {
            return Ok(work());
        }
        tokio::task::spawn_blocking(work)
            .await
            .map_err(std::io::Error::other)
    }

    /// A bounded excerpt for an LLM: the head, the failed and error lines
    /// with their numbers, and the tail, at most about `max_bytes`.
    pub fn excerpt(&self, max_bytes: usize) -> String {
        let stats = self.lines.finished();
        if self.seen as usize <= self.prefix.len() && self.prefix.len() <= max_bytes {
            return String::from_utf8_lossy(&self.prefix).into_owned();
        }
        let head = &self.prefix[..self.prefix.len().min(max_bytes / 2)];
        let mut out = String::from_utf8_lossy(head).into_owned();
        let mut flagged = stats.shown(signal::Level::Failed);
        flagged.extend(stats.shown(signal::Level::Error));
        flagged.sort_by_key(|(n, _)| *n);
        let noted: Vec<String> = flagged
            .iter()
            .map(|(n, text)| format!("L{n}: {text}"))
            .collect();
        if !noted.is_empty() {
            out.push_str("\n[…]\n[failed and error lines]\n");
            out.push_str(&noted.join("\n"));
        }
        let tail_room = max_bytes.saturating_sub(out.len()).min(self.tail.len());
        out.push_str("\n[…]\n");
        out.push_str(&String::from_utf8_lossy(
            &self.tail[self.tail.len() - tail_room..],
        ));
        out
    }

    fn material<'a>(&'a self, facts: &'a SummaryFacts) -> Material<'a> {
        Material {
            prefix: &self.prefix,
            whole: self.seen <= self.prefix.len() as u64,
            tail: &self.tail,
            seen: self.seen,
            stats: self.lines.finished(),
            facts,
        }
    }
}

/// What the kind summarizers work from: bounded, whatever the content size.
pub(crate) struct Material<'a> {
    /// The first bytes of the content.
    pub prefix: &'a [u8],
    /// True when `prefix` is the whole content.
    pub whole: bool,
    /// The last bytes of the content (may overlap `prefix`).
    pub tail: &'a [u8],
    /// Bytes seen in all.
    pub seen: u64,
    /// Lines by level over the whole content.
    pub stats: LineStats,
    /// Counts and pointer.
    pub facts: &'a SummaryFacts,
}

impl Material<'_> {
    /// Whole lines of the prefix, numbered from 1 (a cut last line is left out).
    pub fn prefix_lines(&self) -> Vec<(u64, &[u8])> {
        let mut lines = split(self.prefix);
        if !self.whole && !self.prefix.ends_with(b"\n") && lines.len() > 1 {
            lines.pop(); // cut, unless it is all there is
        }
        (1..).zip(lines).collect()
    }

    /// The last `count` whole lines, with their numbers.
    pub fn tail_lines(&self, count: usize) -> Vec<(u64, &[u8])> {
        let mut lines = split(self.tail);
        if self.seen > self.tail.len() as u64 && !lines.is_empty() {
            lines.remove(0); // may be cut
        }
        let skip = lines.len().saturating_sub(count);
        let lines = &lines[skip..];
        let first = (self.facts.lines + 1).saturating_sub(lines.len() as u64);
        (first..).zip(lines.iter().copied()).collect()
    }

    /// Prefix lines followed by the tail lines that come after them (all, when whole).
    pub fn text_lines(&self, tail_count: usize) -> Vec<(u64, &[u8])> {
        let mut lines = self.prefix_lines();
        if !self.whole {
            let last = lines.last().map_or(0, |l| l.0);
            lines.extend(
                self.tail_lines(tail_count)
                    .into_iter()
                    .filter(|l| l.0 > last),
            );
        }
        lines
    }
}

/// Lines of `text` without their `\n` (none for empty text).
fn split(text: &[u8]) -> Vec<&[u8]> {
    let trimmed = text.strip_suffix(b"\n").unwrap_or(text);
    if text.is_empty() {
        return Vec::new();
    }
    trimmed.split(|b| *b == b'\n').collect()
}

#[cfg(test)]
mod failure_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trace_tests;
