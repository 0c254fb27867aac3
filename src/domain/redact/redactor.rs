//! The incremental redactor: bytes in any pieces, redacted bytes out, the
//! same output whatever the pieces.
//!
//! Work is line by line, with the unfinished line carried over. A line of at
//! most `max_line` bytes is one unit. A longer line is cut into windows of
//! `max_line` bytes: matches starting in the first `max_line - overlap` bytes
//! of a window are redacted, and the next window starts after them, so a
//! secret shorter than `overlap` is caught wherever it lies. Where a window is
//! cut depends only on the content, never on how it arrived. Memory held:
//! one window plus a few bytes of context.
//!
//! Private keys: a `-----BEGIN … PRIVATE KEY-----` marker starts a block that
//! ends with its END marker, at the first line that is not base64, a header
//! or blank (a truncated key), or after `pem_max` bytes. The whole block
//! becomes one `[REDACTED:private_key]`.

use std::sync::LazyLock;

use super::Report;
use super::alternatives::RegexCache;
use super::kinds::Kind;
use super::patterns::{
    LINE, PEM_BEGIN, PEM_END, PREFILTER, accept, is_pem_body_line, is_pem_run_byte,
};
use regex_automata::util::captures::Captures;

/// Bounds of the redactor's work and memory.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Longest line handled as one unit; longer lines go in windows of this size.
    pub max_line: usize,
    /// Bytes at the end of a window that are looked at again by the next one;
    /// longer than any secret (and than `pem_max`).
    pub overlap: usize,
    /// Most bytes a private key block swallows.
    pub pem_max: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_line: 1 << 20,
            overlap: 64 << 10,
            pem_max: 32 << 10,
        }
    }
}

/// The literal start of [`PEM_BEGIN`].
static PEM_BEGIN_LITERAL: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new("-----BEGIN "));

/// Bytes kept before a window's start for the look-behind of `\b`.
const CONTEXT: usize = 8;

/// What a unit of work is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// A whole line (ends with `\n`, or is the last line).
    Line,
    /// The first `max_line` bytes still pending of a line that goes on.
    Window,
}

/// Redacts a byte stream pushed in pieces.
#[derive(Debug)]
pub struct Redactor {
    limits: Limits,
    /// Context bytes (already written) followed by the pending part of the current line.
    carry: Vec<u8>,
    /// How many leading bytes of `carry` are context.
    context: usize,
    /// Inside a multi-line key block: the bytes it swallowed so far.
    pem: Option<usize>,
    report: Report,
    /// The line regex's cache and captures, taken at the first search of a
    /// piece and given back to the pool at its end.
    search: Option<(RegexCache, Captures)>,
}

impl Default for Redactor {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

impl Redactor {
    /// A redactor with these bounds.
    pub fn new(limits: Limits) -> Self {
        let overlap = limits.overlap.max(limits.pem_max + 256);
        let limits = Limits {
            overlap,
            max_line: limits.max_line.max(2 * overlap),
            ..limits
        };
        Self {
            limits,
            carry: Vec::new(),
            context: 0,
            pem: None,
            report: Report::default(),
            search: None,
        }
    }

    /// What was redacted so far.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// Hands over what was redacted so far and starts counting afresh.
    pub fn take_report(&mut self) -> Report {
        std::mem::take(&mut self.report)
    }

    /// True between lines outside a key block: nothing is pending, so a
    /// fresh redactor given the rest of the input writes what this one would.
    pub fn is_clean(&self) -> bool {
        self.carry.is_empty() && self.pem.is_none()
    }

    /// Redacts the next piece of input, appending what is settled to `out`.
    pub fn push(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.push_lines(input, out);
        self.give_back_cache();
    }

    /// The line regex's cache goes back to its pool between pieces: an
    /// upload's redactor lives from its first frame to its last, and a
    /// proxied request's ten offloads held ten caches at once, of which
    /// the pool keeps four: each request then rebuilt six lazy DFAs from
    /// cold, which under `perf` was most of its redaction's CPU.
    fn give_back_cache(&mut self) {
        self.search = None;
    }

    fn push_lines(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut input = input;
        if !self.carry.is_empty() {
            input = &input[self.feed(input, out)..];
            if !self.carry.is_empty() {
                return; // all taken, the line goes on
            }
        }
        let Some(last) = memchr::memrchr(b'\n', input) else {
            self.feed(input, out);
            return;
        };
        let (lines, rest) = input.split_at(last + 1);
        self.lines(lines, out);
        if !rest.is_empty() {
            self.feed(rest, out);
        }
    }

    /// Redacts what is left at the end of the input.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        if self.carry.len() > self.context {
            let carry = std::mem::take(&mut self.carry);
            self.unit(&carry, self.context, Unit::Line, out);
        } else if self.pem.is_some() {
            out.push(b'\n'); // the key ran to the end: give back its last line break
        }
        self.carry.clear();
        self.context = 0;
        self.give_back_cache();
        self.pem = None;
    }

    /// Whole lines, starting at a line start: lines without a candidate
    /// literal are copied as they are.
    fn lines(&mut self, region: &[u8], out: &mut Vec<u8>) {
        let mut pos = 0;
        while pos < region.len() {
            if self.pem.is_none() {
                let Some(found) = PREFILTER.find(&region[pos..]) else {
                    out.extend_from_slice(&region[pos..]);
                    return;
                };
                let candidate = pos + found.start();
                let start =
                    memchr::memrchr(b'\n', &region[pos..candidate]).map_or(pos, |i| pos + i + 1);
                out.extend_from_slice(&region[pos..start]);
                pos = start;
            }
            let end = memchr::memchr(b'\n', &region[pos..]).map_or(region.len(), |i| pos + i + 1);
            let line = &region[pos..end];
            if line.len() <= self.limits.max_line {
                self.unit(line, 0, Unit::Line, out);
            } else {
                self.feed(line, out);
            }
            pos = end;
        }
    }

    /// Adds input to the pending line: completes it (and stops there, returning
    /// the bytes taken), or takes everything, redacting full windows on the way.
    fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> usize {
        let mut taken = 0;
        loop {
            let room = self.context + self.limits.max_line - self.carry.len();
            let look = &input[..room.min(input.len())];
            if let Some(i) = memchr::memchr(b'\n', look) {
                self.carry.extend_from_slice(&input[..=i]);
                let carry = std::mem::take(&mut self.carry);
                self.unit(&carry, self.context, Unit::Line, out);
                self.carry = carry;
                self.carry.clear();
                self.context = 0;
                return taken + i + 1;
            }
            if input.len() < room {
                self.carry.extend_from_slice(input);
                return taken + input.len();
            }
            self.carry.extend_from_slice(&input[..room]);
            input = &input[room..];
            taken += room;
            let mut carry = std::mem::take(&mut self.carry);
            let cut = self.unit(&carry, self.context, Unit::Window, out);
            let context = cut.min(CONTEXT);
            carry.drain(..cut - context);
            self.carry = carry;
            self.context = context;
        }
    }

    /// Redacts `buf[from..]` (`buf[..from]` is context) and writes it up to
    /// the returned position: the end for a line, the cut for a window.
    fn unit(&mut self, buf: &[u8], from: usize, unit: Unit, out: &mut Vec<u8>) -> usize {
        let mut pos = from;
        if self.pem.is_some() {
            match self.pem_continue(buf, from, unit, out) {
                Some(resume) => pos = resume,
                None => return buf.len(),
            }
        }
        let limit = match unit {
            Unit::Line => buf.len(),
            Unit::Window => buf.len() - self.limits.overlap,
        };
        let mut written = pos;
        let mut settled = pos;
        'scan: loop {
            // The marker's literal first: most candidate lines have none,
            // and a substring search is much cheaper than the regex.
            let begin = PEM_BEGIN_LITERAL
                .find(&buf[pos..])
                .and_then(|_| PEM_BEGIN.find_at(buf, pos))
                .filter(|m| m.start() < limit);
            let segment = begin.map_or(buf.len(), |m| m.start());
            let mut at = pos;
            while at < segment {
                let (cache, caps) = self
                    .search
                    .get_or_insert_with(|| (LINE.cache(), LINE.captures()));
                if !LINE.captures_at(cache, &buf[..segment], at, caps) {
                    break;
                }
                let Some(whole) = caps.get_match() else { break };
                if whole.start() >= limit {
                    break 'scan;
                }
                settled = settled.max(whole.end());
                at = whole.end().max(whole.start() + 1);
                let Some((kind, specific, span)) = LINE.which(caps) else {
                    continue;
                };
                let next = buf.get(span.end).copied();
                if let Some(kind) = accept(kind, specific, &buf[span.clone()], next) {
                    out.extend_from_slice(&buf[written..span.start]);
                    self.replace(kind, out);
                    written = span.end;
                }
            }
            let Some(begin) = begin else { break };
            out.extend_from_slice(&buf[written..begin.start()]);
            self.replace(Kind::PrivateKey, out);
            match self.pem_start(buf, begin.end(), unit) {
                Some(end) => {
                    written = end;
                    settled = settled.max(end);
                    pos = end;
                }
                None => return buf.len(),
            }
        }
        let end = match unit {
            Unit::Line => buf.len(),
            Unit::Window => settled.max(limit),
        };
        out.extend_from_slice(&buf[written..end]);
        end
    }

    /// After a BEGIN marker ending at `from`: where the swallowed key ends on
    /// this line, or `None` when the block goes on over the next lines (the
    /// rest of the unit is swallowed).
    fn pem_start(&mut self, buf: &[u8], from: usize, unit: Unit) -> Option<usize> {
        let max = (buf.len() - from).min(self.limits.pem_max);
        let run = buf[from..from + max]
            .iter()
            .position(|b| !is_pem_run_byte(*b))
            .unwrap_or(max);
        let run_end = from + run;
        if let Some(end) = PEM_END.find(&buf[from..run_end]) {
            return Some(from + end.end());
        }
        let rest = &buf[run_end..];
        let line_ends = unit == Unit::Line && (rest.is_empty() || rest == b"\n");
        if line_ends && run < self.limits.pem_max {
            self.pem = Some(buf.len() - from);
            return None;
        }
        Some(run_end)
    }

    /// A unit inside a key block: where normal redaction resumes, or `None`
    /// when the whole unit belongs to the block.
    /// A truncated block gives back the line break it swallowed last.
    fn pem_continue(
        &mut self,
        buf: &[u8],
        from: usize,
        unit: Unit,
        out: &mut Vec<u8>,
    ) -> Option<usize> {
        let swallowed = self.pem.unwrap_or(0);
        let body = &buf[from..];
        let look = &body[..body.len().min(self.limits.pem_max + 64)];
        if let Some(end) = PEM_END.find(look) {
            self.pem = None;
            return Some(from + end.end());
        }
        if unit == Unit::Line
            && swallowed + body.len() <= self.limits.pem_max
            && is_pem_body_line(body)
        {
            self.pem = Some(swallowed + body.len());
            return None;
        }
        self.pem = None; // a truncated key: this line is not part of it
        out.push(b'\n');
        Some(from)
    }

    fn replace(&mut self, kind: Kind, out: &mut Vec<u8>) {
        out.extend_from_slice(kind.marker().as_bytes());
        self.report.add(kind);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redactor_holds_no_regex_cache_between_pieces() {
        // Ten redactors alive at once (ten offloads of one request), each
        // fed a line that reaches the regex: none keeps a cache afterwards,
        // so the pool's warm caches serve the next pieces.
        let mut redactors: Vec<Redactor> = (0..10).map(|_| Redactor::default()).collect();
        for redactor in &mut redactors {
            let mut out = Vec::new();
            redactor.push(b"password=hunter22xyz\nno secret here\n", &mut out);
            assert_eq!(out, b"password=[REDACTED:generic_secret]\nno secret here\n");
            assert!(redactor.search.is_none());
            redactor.push(b"token: \"abc", &mut out);
            redactor.finish(&mut out);
            assert!(redactor.search.is_none());
        }
    }
}
