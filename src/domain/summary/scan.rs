//! The cheap per-frame pass: newlines, and lines that look like errors,
//! failures, warnings, passes or test tallies, with their numbers.
//!
//! A line may straddle frames: each frame reports its inner lines as done and
//! its first and last pieces as [`Segment`]s, which the builder stitches into
//! whole lines ([`OpenLine`]). So the result is the same for any framing.

use std::sync::LazyLock;

use super::line_stats::{CANDIDATE, LINE_KEEP, LineStats, PASSED, TALLY, clean_line, judge};
use super::signal::Level;

/// Bytes at each end of a piece kept to find words that cross a frame boundary.
const EDGE: usize = 15;

/// (word, flag) looked for in the lower-cased content: every verdict the
/// classifier knows holds one of them, but for one-letter levels (`E: `,
/// `W1124 …`), which are found by how a line starts.
const WORDS: [(&[u8], u8); 13] = [
    (b"fail", CANDIDATE),
    (b"error", CANDIDATE),
    (b"err!", CANDIDATE),
    (b"exception", CANDIDATE),
    (b"fatal", CANDIDATE),
    (b"panic", CANDIDATE),
    (b"crit", CANDIDATE),
    (b"warn", CANDIDATE),
    (b"exit", CANDIDATE),
    (b"_test.go:", CANDIDATE),
    // The lead bytes of both `✕` and `✗` (U+2715, U+2717).
    (b"\xe2\x9c", CANDIDATE),
    (b"passed", PASSED),
    (b"test result:", TALLY),
];

/// One SIMD substring finder per word, run over a lower-cased copy of the
/// frame: measured ~4x faster than one case-insensitive multi-pattern search,
/// whose prefilter gives up on such common first letters.
static FINDERS: LazyLock<Vec<(memchr::memmem::Finder<'static>, u8)>> = LazyLock::new(|| {
    WORDS
        .iter()
        .map(|(w, flag)| (memchr::memmem::Finder::new(w), *flag))
        .collect()
});

/// Bytes lower-cased at a time: a small buffer, where a lower-cased copy
/// of the whole frame was a frame-sized allocation for every frame.
const WINDOW: usize = 64 << 10;

/// Bytes a window looks past its end: a word starting in it ends there.
const OVERLAP: usize = {
    let mut longest = 0;
    let mut i = 0;
    while i < WORDS.len() {
        if WORDS[i].0.len() > longest {
            longest = WORDS[i].0.len();
        }
        i += 1;
    }
    longest - 1
};

/// Adds `(offset, flag)` for every occurrence of a word of [`WORDS`] in
/// `frame`, in any case, window by window.
fn find_words(frame: &[u8], hits: &mut Vec<(usize, u8)>) {
    let mut lower = Vec::with_capacity(WINDOW.min(frame.len()) + OVERLAP);
    let mut start = 0;
    while start < frame.len() {
        let end = (start + WINDOW).min(frame.len());
        lower.clear();
        lower.extend_from_slice(&frame[start..(end + OVERLAP).min(frame.len())]);
        lower.make_ascii_lowercase();
        for (finder, flag) in FINDERS.iter() {
            hits.extend(
                finder
                    .find_iter(&lower)
                    .filter(|&at| start + at < end) // later ones: the next window's
                    .map(|at| (start + at, *flag)),
            );
        }
        start = end;
    }
}

/// Flags of the words found anywhere in `lower` (already lower-cased).
fn flags_in(lower: &[u8]) -> u8 {
    FINDERS
        .iter()
        .filter(|(finder, _)| finder.find(lower).is_some())
        .fold(0, |acc, (_, flag)| acc | flag)
}

/// A piece of a line at a frame's edge.
#[derive(Clone, Debug, Default)]
pub struct Segment {
    flags: u8,
    head: Vec<u8>,
    start: Vec<u8>,
    end: Vec<u8>,
    len: u64,
}

impl Segment {
    fn of(piece: &[u8], flags: u8) -> Self {
        Self {
            flags,
            head: piece[..piece.len().min(LINE_KEEP)].to_vec(),
            start: piece[..piece.len().min(EDGE)].to_vec(),
            end: piece[piece.len().saturating_sub(EDGE)..].to_vec(),
            len: piece.len() as u64,
        }
    }
}

/// What one frame shows of its lines.
#[derive(Clone, Debug, Default)]
pub struct FrameScan {
    /// Newlines in the frame.
    pub newlines: u64,
    /// The frame up to its first newline (the whole frame without one).
    first: Segment,
    /// Lines between the first and the last newline, numbered from 1 = the line after the first newline.
    inner: LineStats,
    /// The frame after its last newline, when there is one and something follows it.
    last: Option<Segment>,
}

/// Scans one frame (runs on a worker thread).
pub fn scan_frame(frame: &[u8]) -> FrameScan {
    let mut hits: Vec<(usize, u8)> = Vec::new();
    let mut newlines = 0u64;
    if one_letter_level(frame) {
        hits.push((0, CANDIDATE));
    }
    for at in memchr::memchr_iter(b'\n', frame) {
        newlines += 1;
        if one_letter_level(&frame[at + 1..]) {
            hits.push((at + 1, CANDIDATE));
        }
    }
    find_words(frame, &mut hits);
    hits.sort_unstable();
    let first_end = memchr::memchr(b'\n', frame).unwrap_or(frame.len());
    let last_start = memchr::memrchr(b'\n', frame).map_or(0, |p| p + 1);
    let (mut first_flags, mut last_flags) = (0u8, 0u8);
    let mut inner = LineStats::default();
    // The last line of each shown level beyond the examples: (number, start, end).
    let mut last_at: [Option<(u64, usize, usize)>; 3] = [None; 3];
    // The line of the latest hit: (start, end, flags).
    let mut current: Option<(usize, usize, u8)> = None;
    // Newlines before `counted_to`: counted only as far as a shown line needs.
    let (mut counted_to, mut index) = (0usize, 0u64);
    let mut close = |(start, end, flags): (usize, usize, u8), inner: &mut LineStats| {
        if start == 0 {
            first_flags |= flags;
        } else if start == last_start && newlines > 0 {
            last_flags |= flags;
        } else {
            let line = &frame[start..end];
            let head = &line[..line.len().min(LINE_KEEP)];
            let level = judge(flags, head);
            if level.is_some_and(|l| l != Level::Passed) {
                index += memchr::memchr_iter(b'\n', &frame[counted_to..start]).count() as u64;
                counted_to = start;
            }
            if !inner.add_judged(index, level, flags, head, line.len() > LINE_KEEP)
                && let Some(level) = level
            {
                // Cleaned once the frame is done: most such lines are followed by more.
                last_at[level as usize] = Some((index, start, end));
            }
        }
    };
    for (at, flag) in hits {
        if let Some(open) = current.as_mut()
            && at < open.1
        {
            open.2 |= flag;
            continue;
        }
        if let Some(done) = current.take() {
            close(done, &mut inner);
        }
        let start = memchr::memrchr(b'\n', &frame[..at]).map_or(0, |p| p + 1);
        let end = memchr::memchr(b'\n', &frame[at..]).map_or(frame.len(), |p| at + p);
        current = Some((start, end, flag));
    }
    if let Some(done) = current.take() {
        close(done, &mut inner);
    }
    for (kept, at) in inner.last.iter_mut().zip(last_at) {
        if let Some((number, start, end)) = at {
            let line = &frame[start..end];
            let head = &line[..line.len().min(LINE_KEEP)];
            *kept = Some((number, clean_line(head, line.len() > LINE_KEEP)));
        }
    }
    let last = (newlines > 0 && last_start < frame.len())
        .then(|| Segment::of(&frame[last_start..], last_flags));
    FrameScan {
        newlines,
        first: Segment::of(&frame[..first_end], first_flags),
        inner,
        last,
    }
}

/// True when `line` may start with a one-letter level (`E: `, `W: `,
/// `E   ` of pytest, `E1124 07:21:33` of glog), which no word gives away.
fn one_letter_level(line: &[u8]) -> bool {
    matches!(line, [b'E' | b'W' | b'F', b':' | b' ' | b'0'..=b'9', ..])
}

/// A line not yet ended: started in an earlier frame, or the content's last.
#[derive(Clone, Debug, Default)]
pub struct OpenLine {
    number: u64,
    flags: u8,
    head: Vec<u8>,
    end: Vec<u8>,
    len: u64,
}

impl OpenLine {
    fn start(number: u64) -> Self {
        Self {
            number,
            ..Self::default()
        }
    }

    fn extend(&mut self, piece: &Segment) {
        if !self.end.is_empty() && piece.len > 0 {
            // A word may cross the seam: look at both sides of it together.
            let mut seam = self.end.clone();
            seam.extend_from_slice(&piece.start);
            self.flags |= flags_in(&seam.to_ascii_lowercase());
        }
        self.flags |= piece.flags;
        let room = LINE_KEEP - self.head.len();
        self.head
            .extend_from_slice(&piece.head[..piece.head.len().min(room)]);
        self.end.extend_from_slice(&piece.end);
        let excess = self.end.len().saturating_sub(EDGE);
        self.end.drain(..excess);
        self.len += piece.len;
    }

    /// Counts the line in `stats`.
    pub fn close(&self, stats: &mut LineStats) {
        // Frames may have cut its first bytes apart: look at them whole.
        let start = if one_letter_level(&self.head) {
            CANDIDATE
        } else {
            0
        };
        stats.add_line(
            self.number,
            self.flags | start,
            &self.head,
            self.len > LINE_KEEP as u64,
        );
    }
}

/// Stitches frame scans into line stats, in content order.
#[derive(Clone, Debug, Default)]
pub struct LineStitcher {
    /// Stats of the lines ended so far.
    pub stats: LineStats,
    /// The line still open at the end of the frames seen.
    pub open: Option<OpenLine>,
}

impl LineStitcher {
    /// Takes the scan of the next frame, whose first byte is on line `first_line`.
    pub fn add(&mut self, scan: &FrameScan, first_line: u64) {
        let mut open = self
            .open
            .take()
            .unwrap_or_else(|| OpenLine::start(first_line));
        open.extend(&scan.first);
        if scan.newlines == 0 {
            self.open = Some(open);
            return;
        }
        open.close(&mut self.stats);
        self.stats.merge(&scan.inner, first_line);
        self.open = scan.last.as_ref().map(|last| {
            let mut line = OpenLine::start(first_line + scan.newlines);
            line.extend(last);
            line
        });
    }

    /// The stats with the open line ended too.
    pub fn finished(&self) -> LineStats {
        let mut stats = self.stats.clone();
        if let Some(open) = &self.open {
            open.close(&mut stats);
        }
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stitched(content: &[u8], frame: usize) -> LineStats {
        let mut stitcher = LineStitcher::default();
        let mut line = 1;
        for piece in content.chunks(frame.max(1)) {
            let scan = scan_frame(piece);
            stitcher.add(&scan, line);
            line += scan.newlines;
        }
        stitcher.finished()
    }

    #[test]
    fn lines_are_counted_once_at_their_worst_level() {
        let log = b"ok\nWARN low disk\nERROR: boom\nFAILED test_x - AssertionError\n3 passed\n";
        let stats = stitched(log, log.len());
        assert_eq!(stats.counts, [1, 1, 1, 1]);
        assert_eq!(
            stats.examples[0],
            [(4, "FAILED test_x - AssertionError".into())]
        );
        assert_eq!(stats.examples[1], [(3, "ERROR: boom".into())]);
        assert_eq!(stats.examples[2], [(2, "WARN low disk".into())]);
    }

    #[test]
    fn any_framing_gives_the_same_stats() {
        let mut log = String::new();
        for i in 0..300 {
            match i % 7 {
                0 => log.push_str(&format!("{i} Traceback of something\n")),
                3 => log.push_str(&format!("{i} warning: unused {}\n", "x".repeat(i * 5))),
                5 => log.push_str("test result: FAILED. 3 passed; 1 failed; 2 ignored\n"),
                _ => log.push_str(&format!("{i} fine\n")),
            }
        }
        log.push_str("last ERROR without newline");
        let whole = stitched(log.as_bytes(), log.len());
        assert_eq!(whole.tally.runs, 43);
        assert_eq!(whole.tally.failed, 43);
        for frame in [1, 2, 7, 13, 64, 1000] {
            let framed = stitched(log.as_bytes(), frame);
            assert_eq!(framed.counts, whole.counts, "frame {frame}");
            assert_eq!(framed.examples, whole.examples, "frame {frame}");
            assert_eq!(framed.tally, whole.tally, "frame {frame}");
        }
    }
}
