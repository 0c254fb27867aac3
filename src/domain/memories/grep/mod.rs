//! `grep -n` inside one memory: a regex (linear time, size-limited) run over
//! the content as it streams out of its frames, with context lines, a cap on
//! matches and one on bytes scanned, and a `next` line to continue from.
//!
//! Lines are what `grep` and `/lines` call lines: 1-based, ended by `\n`, a
//! `\r` before it part of the line, a last line without `\n` counted. A
//! pattern is matched against each line on its own, so `^`, `$` and `\s`
//! never reach across a newline.

use std::collections::VecDeque;

use regex::bytes::{Regex, RegexBuilder};

use crate::domain::DomainError;
use crate::domain::memories::grep::plan::Plan;
use crate::domain::memories::read::ObjectReader;
use crate::model::GrepPattern;
use crate::storage::meta::FrameWords;
use run::{Run, read_ahead};

pub mod across;
pub mod plan;
pub mod words;

/// Bytes of a line returned (matches and context); a longer line is cut at
/// a UTF-8 boundary and marked `cut`.
pub const LINE_BYTES: usize = 2048;
/// Most context lines on each side of a match.
pub const MAX_CONTEXT: u32 = 10;
/// Most matches in one answer.
pub const MAX_MATCHES: u32 = 1000;
/// Matches in an answer when none is asked.
pub const DEFAULT_MATCHES: u32 = 100;
/// Limit of the compiled pattern: a pattern over it is refused, not run.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;
/// Longest line matched whole; a longer one is matched on its first bytes,
/// so memory stays bounded whatever the content.
pub const LONG_LINE: usize = 16 << 20;

/// What to look for and where to start.
#[derive(Clone, Debug)]
pub struct GrepQuery {
    /// The pattern, how it matches, and the context lines around a match.
    pub what: GrepPattern,
    /// Most matches to return.
    pub max_matches: u32,
    /// Start after this line (0: from the top); an answer's `next`.
    pub after: u64,
}

impl GrepQuery {
    /// A grep for `what` from the line after `after`, at most `max_matches`
    /// matches ([`DEFAULT_MATCHES`] when not given).
    pub fn new(what: GrepPattern, max_matches: Option<u32>, after: u64) -> Self {
        Self {
            what,
            max_matches: max_matches.unwrap_or(DEFAULT_MATCHES),
            after,
        }
    }
}

/// One matching line with its context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrepMatch {
    /// Its number, as `/lines` and `grep -n` count.
    pub line: u64,
    /// The line (lossy UTF-8, a final `\r` dropped, at most [`LINE_BYTES`]).
    pub text: String,
    /// The line was longer than [`LINE_BYTES`]: fetch it with `/lines`.
    pub cut: bool,
    /// Up to `context` lines before it, in order (not before `after`).
    pub before: Vec<String>,
    /// Up to `context` lines after it, in order.
    pub after: Vec<String>,
}

/// The answer of a grep.
#[derive(Clone, Debug, Default)]
pub struct GrepResult {
    /// Matching lines in order.
    pub matches: Vec<GrepMatch>,
    /// Content bytes read.
    pub scanned_bytes: u64,
    /// Content bytes not read: the full-text index showed no line there
    /// can match.
    pub skipped_bytes: u64,
    /// The answer stopped before the end: at `max_matches`, or at the scan cap.
    pub truncated: bool,
    /// The `after` that continues the search; None when the content is exhausted.
    pub next: Option<u64>,
}

/// The pattern of `query`, compiled, or why it cannot be.
pub fn compile(query: &GrepQuery) -> Result<Regex, DomainError> {
    let source = if query.what.fixed {
        regex::escape(&query.what.pattern)
    } else {
        query.what.pattern.clone()
    };
    RegexBuilder::new(&source)
        .case_insensitive(query.what.ignore_case)
        .multi_line(true)
        .size_limit(PATTERN_SIZE_LIMIT)
        .dfa_size_limit(8 * PATTERN_SIZE_LIMIT)
        .build()
        .map_err(|e| DomainError::InvalidField {
            field: "pattern",
            message: match e {
                regex::Error::CompiledTooBig(limit) => format!(
                    "the pattern compiles to more than {limit} bytes: make it simpler (fewer repetitions or alternatives)"
                ),
                other => format!("not a valid regex: {other}"),
            },
        })
}

/// Checks the numbers of `query` against the caps.
pub fn validate(query: &GrepQuery) -> Result<(), DomainError> {
    if query.what.context > MAX_CONTEXT {
        return Err(DomainError::InvalidField {
            field: "context",
            message: format!("at most {MAX_CONTEXT} lines of context"),
        });
    }
    if query.max_matches == 0 || query.max_matches > MAX_MATCHES {
        return Err(DomainError::InvalidField {
            field: "max_matches",
            message: format!("between 1 and {MAX_MATCHES}"),
        });
    }
    Ok(())
}

/// Greps the content of `reader` for `query`, reading at most about
/// `max_scan_bytes` (whole frames: the last one read may pass it). With
/// what the full-text index `known`s of the object's frames for the
/// pattern's [`required_words`](crate::domain::memories::grep::words::required_words), frames
/// that cannot hold a match are not read (see [`Plan`]).
pub async fn grep(
    reader: ObjectReader,
    query: &GrepQuery,
    max_scan_bytes: u64,
    known: Option<&[FrameWords]>,
) -> Result<GrepResult, DomainError> {
    validate(query)?;
    let regex = compile(query)?;
    let total = reader.lines();
    if query.after >= total {
        return Ok(GrepResult::default());
    }
    let mut side = reader;
    let start = side.line_start(query.after + 1, 0).await?;
    let first = side.frame_at_offset(start);
    let plan = Plan::new(&side, first, query.what.context, known);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    // Frames are read and decoded ahead, several at once, while the last
    // ones are scanned.
    let mut pieces = read_ahead(&side, plan.frames().to_vec(), start, threads);
    let mut run = Run::new(
        Scan::new(regex, query, query.after + 1),
        start,
        side.frame_count().saturating_sub(1),
    );
    let mut expect = first;
    let mut received = 0;
    while let Some(piece) = pieces.recv().await {
        // The cap stops between lines (a line begun in `carry` is read
        // again by the next answer), and only once a line was read, so
        // `next` always moves on.
        if run.scanned() >= max_scan_bytes && run.line()? > query.after + 1 {
            return run.finish(Stop::Cap);
        }
        let (idx, piece) = piece?;
        received += 1;
        if let Some(stop) = run.pass(&mut side, &plan, expect, idx).await? {
            return run.finish(stop);
        }
        if let Some(stop) = run.take(idx, piece).await? {
            return run.finish(stop);
        }
        expect = idx + 1;
    }
    if received < plan.frames().len() {
        // The reading task ended without an error to tell: never answer
        // "exhausted" for content that was not read.
        return Err(DomainError::Internal(format!(
            "grep read stopped after {received} of {} frames",
            plan.frames().len()
        )));
    }
    let count = side.frame_count();
    if let Some(stop) = run.pass(&mut side, &plan, expect, count).await? {
        return run.finish(stop);
    }
    run.finish(Stop::End)
}

/// Why a scan stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// The content is exhausted.
    End,
    /// `max_matches` were found and another match follows (or may).
    Full,
    /// The byte cap was reached.
    Cap,
}

/// The state of one grep across the pieces of the content.
struct Scan {
    regex: Regex,
    context: usize,
    max_matches: usize,
    matches: Vec<GrepMatch>,
    /// The last `context` lines before the current position.
    recent: VecDeque<String>,
    /// Lines still to be read as after-context of the latest match.
    owed: usize,
    /// Number of the next line.
    line: u64,
}

impl Scan {
    fn new(regex: Regex, query: &GrepQuery, first_line: u64) -> Self {
        Self {
            regex,
            context: query.what.context as usize,
            max_matches: query.max_matches as usize,
            matches: Vec::new(),
            recent: VecDeque::new(),
            owed: 0,
            line: first_line,
        }
    }

    /// Goes on at line `line`, somewhere further on: nothing read so far
    /// stands right before it.
    fn jump(&mut self, line: u64) {
        self.line = line;
        self.recent.clear();
    }

    fn full(&self) -> bool {
        self.matches.len() >= self.max_matches
    }

    /// Takes `piece[..whole_to]` (whole lines, or the content's end) after
    /// the partial line in `carry`, and keeps `piece[whole_to..]` in `carry`.
    fn piece(
        &mut self,
        carry: &mut Vec<u8>,
        carry_cut: &mut bool,
        piece: &[u8],
        whole_to: usize,
    ) -> Option<Stop> {
        let (lines, rest) = piece.split_at(whole_to);
        let mut lines = lines;
        if !carry.is_empty() || *carry_cut {
            // The line begun in earlier pieces ends in this one (or goes on).
            match memchr::memchr(b'\n', lines) {
                Some(nl) => {
                    extend_capped(carry, carry_cut, &lines[..nl]);
                    let line = std::mem::take(carry);
                    *carry_cut = false;
                    if let Some(stop) = self.region(&line, true) {
                        return Some(stop);
                    }
                    lines = &lines[nl + 1..];
                }
                None if rest.is_empty() && whole_to == piece.len() && !lines.is_empty() => {
                    // The content's last line, without a newline.
                    extend_capped(carry, carry_cut, lines);
                    let line = std::mem::take(carry);
                    return self.region(&line, false);
                }
                None => {
                    extend_capped(carry, carry_cut, lines);
                    extend_capped(carry, carry_cut, rest);
                    return None;
                }
            }
        }
        if let Some(stop) = self.region(lines, false) {
            return Some(stop);
        }
        extend_capped(carry, carry_cut, rest);
        None
    }

    /// Greps `data`: whole lines, the last one without its newline when
    /// `single` is set or when it ends the content.
    fn region(&mut self, data: &[u8], single: bool) -> Option<Stop> {
        if single {
            return self.line_read(data);
        }
        let mut pos = 0;
        while pos < data.len() {
            if self.owed > 0 || self.full() {
                let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
                if let Some(stop) = self.line_read(&data[pos..end]) {
                    return Some(stop);
                }
                pos = end + 1;
                continue;
            }
            let rest = &data[pos..];
            match self.next_match(rest) {
                None => {
                    self.skip(rest);
                    return None;
                }
                Some(start) => {
                    self.skip(&rest[..start]);
                    pos += start;
                    let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
                    if let Some(stop) = self.line_read(&data[pos..end]) {
                        return Some(stop);
                    }
                    pos = end + 1;
                }
            }
        }
        None
    }

    /// Offset in `hay` (whole lines) of the first line that matches.
    fn next_match(&self, hay: &[u8]) -> Option<usize> {
        let mut from = 0;
        while from <= hay.len() {
            let found = self.regex.find_at(hay, from)?;
            let start = memchr::memrchr(b'\n', &hay[..found.start()]).map_or(0, |p| p + 1);
            if start >= hay.len() {
                return None; // past the last line's newline: no line there
            }
            let end = memchr::memchr(b'\n', &hay[start..]).map_or(hay.len(), |i| start + i);
            // A match within the line is one of the line alone (the
            // anchors see a newline or the content's edge either way); one
            // that runs past it is checked on the line by itself.
            if found.end() <= end || self.regex.is_match(&hay[start..end]) {
                return Some(start);
            }
            from = end + 1;
        }
        None
    }

    /// Reads one line at the current position: owed context, and a match.
    fn line_read(&mut self, line: &[u8]) -> Option<Stop> {
        let number = self.line;
        self.line += 1;
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let matched = self.regex.is_match(line);
        if matched && self.full() {
            self.line = number; // not taken: the next answer starts before it
            return Some(Stop::Full);
        }
        if self.owed > 0 {
            self.owed -= 1;
            let text = shown(line).0;
            let context = self.context as u64;
            for earlier in self.matches.iter_mut().rev() {
                if number - earlier.line > context {
                    break;
                }
                earlier.after.push(text.clone());
            }
        }
        if matched {
            let (text, cut) = shown(line);
            self.matches.push(GrepMatch {
                line: number,
                text: text.clone(),
                cut,
                before: self.recent.iter().cloned().collect(),
                after: Vec::new(),
            });
            self.owed = self.context;
            self.remember(text);
        } else {
            if self.context > 0 {
                self.remember(shown(line).0);
            }
            if self.full() && self.owed == 0 {
                return Some(Stop::Full);
            }
        }
        None
    }

    /// Lines passed over without a match: counted, the last few kept as context.
    fn skip(&mut self, lines: &[u8]) {
        if lines.is_empty() {
            return;
        }
        let newlines = memchr::memchr_iter(b'\n', lines).count() as u64;
        let ends_open = lines.last().is_some_and(|b| *b != b'\n');
        self.line += newlines + u64::from(ends_open);
        if self.context == 0 {
            return;
        }
        let mut tail: Vec<String> = Vec::new();
        let body = lines.strip_suffix(b"\n").unwrap_or(lines);
        let mut end = body.len();
        while tail.len() < self.context {
            let start = memchr::memrchr(b'\n', &body[..end]).map_or(0, |p| p + 1);
            tail.push(shown(&body[start..end]).0);
            if start == 0 {
                break;
            }
            end = start - 1;
        }
        for text in tail.into_iter().rev() {
            self.remember(text);
        }
    }

    fn remember(&mut self, text: String) {
        if self.context == 0 {
            return;
        }
        if self.recent.len() == self.context {
            self.recent.pop_front();
        }
        self.recent.push_back(text);
    }

    fn finish(self, scanned_bytes: u64, stop: Stop) -> GrepResult {
        let last_match = self.matches.last().map(|m| m.line);
        let next = match stop {
            Stop::End => None,
            // Continue after the last match taken (its after-context may
            // hold the next match).
            Stop::Full => last_match,
            Stop::Cap => Some(self.line - 1),
        };
        GrepResult {
            matches: self.matches,
            scanned_bytes,
            skipped_bytes: 0,
            truncated: stop != Stop::End,
            next,
        }
    }
}

/// Appends `more` to the partial line `carry`, up to [`LONG_LINE`] bytes.
fn extend_capped(carry: &mut Vec<u8>, cut: &mut bool, more: &[u8]) {
    let room = LONG_LINE.saturating_sub(carry.len());
    if more.len() > room {
        *cut = true;
    }
    carry.extend_from_slice(&more[..more.len().min(room)]);
}

/// A line as shown: lossy UTF-8 of at most [`LINE_BYTES`], and whether it was cut.
fn shown(line: &[u8]) -> (String, bool) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() <= LINE_BYTES {
        return (String::from_utf8_lossy(line).into_owned(), false);
    }
    let mut cut = LINE_BYTES;
    while cut > 0 && (line[cut] & 0xC0) == 0x80 {
        cut -= 1;
    }
    (String::from_utf8_lossy(&line[..cut]).into_owned(), true)
}

mod run;

#[cfg(test)]
mod tests;
