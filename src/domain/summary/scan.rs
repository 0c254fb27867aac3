//! The cheap per-frame pass: newlines, and lines that look like errors,
//! failures, warnings, passes or test tallies, with their numbers.
//!
//! A line may straddle frames: each frame reports its inner lines as done and
//! its first and last pieces as [`Segment`]s, which the builder stitches into
//! whole lines ([`OpenLine`]). So the result is the same for any framing.

use std::sync::LazyLock;

/// Bytes of a line kept for display (over 200 characters in any encoding).
pub const LINE_KEEP: usize = 1024;
/// Characters of a line shown.
pub const LINE_CHARS: usize = 200;
/// Example lines kept per level.
pub const EXAMPLES: usize = 8;
/// Bytes at each end of a piece kept to find words that cross a frame boundary.
const EDGE: usize = 15;

/// Line levels, most severe first; a line counts once, at its most severe level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// `fail`, `failed`, `FAILURE`.
    Failed = 0,
    /// `error`, `exception`, `fatal`, `panic`, `traceback`.
    Error = 1,
    /// `warn`, `warning`.
    Warning = 2,
    /// `passed` (lines that only say `ok` are not counted: not worth a search of every frame).
    Passed = 3,
}

/// Levels in order, with the words shown for them.
pub const LEVELS: [(Level, &str); 4] = [
    (Level::Failed, "failed"),
    (Level::Error, "error"),
    (Level::Warning, "warning"),
    (Level::Passed, "passed"),
];

/// Flag of a cargo `test result:` line, whose figures are added up.
const TALLY: u8 = 1 << 4;

/// (word, flag) looked for in the lower-cased content.
const WORDS: [(&str, u8); 9] = [
    ("fail", 1 << Level::Failed as u8),
    ("error", 1 << Level::Error as u8),
    ("exception", 1 << Level::Error as u8),
    ("fatal", 1 << Level::Error as u8),
    ("panic", 1 << Level::Error as u8),
    ("traceback", 1 << Level::Error as u8),
    ("warn", 1 << Level::Warning as u8),
    ("passed", 1 << Level::Passed as u8),
    ("test result:", TALLY),
];

/// One SIMD substring finder per word, run over a lower-cased copy of the
/// frame: measured ~4x faster than one case-insensitive multi-pattern search,
/// whose prefilter gives up on such common first letters.
static FINDERS: LazyLock<Vec<(memchr::memmem::Finder<'static>, u8)>> = LazyLock::new(|| {
    WORDS
        .iter()
        .map(|(w, flag)| (memchr::memmem::Finder::new(w.as_bytes()), *flag))
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

/// Figures of test-runner tallies (`10 passed; 2 failed; 1 ignored`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Tally lines seen.
    pub runs: u64,
    /// Tests passed.
    pub passed: u64,
    /// Tests failed.
    pub failed: u64,
    /// Tests ignored or skipped.
    pub skipped: u64,
}

impl Tally {
    /// The figures named in one tally line; None if it names none.
    pub fn parse(line: &str) -> Option<Self> {
        let mut tally = Self {
            runs: 1,
            ..Self::default()
        };
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == '.')
            .filter(|w| !w.is_empty())
            .collect();
        let mut found = false;
        for pair in words.windows(2) {
            let Ok(n) = pair[0].parse::<u64>() else {
                continue;
            };
            let slot = match pair[1].to_ascii_lowercase().as_str() {
                "passed" => &mut tally.passed,
                "failed" | "failing" => &mut tally.failed,
                "ignored" | "skipped" | "pending" => &mut tally.skipped,
                _ => continue,
            };
            *slot += n;
            found = true;
        }
        found.then_some(tally)
    }

    fn add(&mut self, other: &Self) {
        self.runs += other.runs;
        self.passed += other.passed;
        self.failed += other.failed;
        self.skipped += other.skipped;
    }
}

/// Lines by level, the first few of each with their numbers, and tallies.
#[derive(Clone, Debug, Default)]
pub struct LineStats {
    /// Lines per [`Level`].
    pub counts: [u64; 4],
    /// The first [`EXAMPLES`] lines of each level but `Passed`: (number, text).
    pub examples: [Vec<(u64, String)>; 3],
    /// Sum of the cargo `test result:` lines.
    pub tally: Tally,
}

impl LineStats {
    /// Counts one line of `flags`; `head` is its start (at most [`LINE_KEEP`] bytes).
    pub fn add_line(&mut self, number: u64, flags: u8, head: &[u8], truncated: bool) {
        if flags & TALLY != 0
            && let Some(tally) = Tally::parse(&String::from_utf8_lossy(head))
        {
            self.tally.add(&tally);
        }
        let Some(level) = (0..4).find(|l| flags & (1 << l) != 0) else {
            return;
        };
        self.counts[level] += 1;
        if let Some(examples) = self.examples.get_mut(level)
            && examples.len() < EXAMPLES
        {
            examples.push((number, clean_line(head, truncated)));
        }
    }

    /// True when a line of `flags` would be shown, so its number is needed.
    pub fn wants_number(&self, flags: u8) -> bool {
        (0..3).any(|l| {
            flags & (1 << l) != 0
                && flags & ((1 << l) - 1) == 0
                && self.examples[l].len() < EXAMPLES
        })
    }

    /// Adds the stats of later lines, numbered from `offset`.
    pub fn merge(&mut self, later: &Self, offset: u64) {
        for (count, more) in self.counts.iter_mut().zip(later.counts) {
            *count += more;
        }
        for (kept, more) in self.examples.iter_mut().zip(&later.examples) {
            let room = EXAMPLES.saturating_sub(kept.len());
            kept.extend(more.iter().take(room).map(|(n, t)| (n + offset, t.clone())));
        }
        self.tally.add(&later.tally);
    }
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
    let newlines = memchr::memchr_iter(b'\n', frame).count() as u64;
    let mut hits: Vec<(usize, u8)> = Vec::new();
    find_words(frame, &mut hits);
    hits.sort_unstable();
    let first_end = memchr::memchr(b'\n', frame).unwrap_or(frame.len());
    let last_start = memchr::memrchr(b'\n', frame).map_or(0, |p| p + 1);
    let (mut first_flags, mut last_flags) = (0u8, 0u8);
    let mut inner = LineStats::default();
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
            if inner.wants_number(flags) {
                index += memchr::memchr_iter(b'\n', &frame[counted_to..start]).count() as u64;
                counted_to = start;
            }
            let line = &frame[start..end];
            let head = &line[..line.len().min(LINE_KEEP)];
            inner.add_line(index, flags, head, line.len() > LINE_KEEP);
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
    let last = (newlines > 0 && last_start < frame.len())
        .then(|| Segment::of(&frame[last_start..], last_flags));
    FrameScan {
        newlines,
        first: Segment::of(&frame[..first_end], first_flags),
        inner,
        last,
    }
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
        stats.add_line(
            self.number,
            self.flags,
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

/// Lossy UTF-8, trailing CR dropped, controls made spaces, clipped to
/// [`LINE_CHARS`] with `…` when longer or `truncated`.
pub fn clean_line(line: &[u8], truncated: bool) -> String {
    let line = if truncated {
        line
    } else {
        line.strip_suffix(b"\r").unwrap_or(line)
    };
    let text = String::from_utf8_lossy(line);
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(LINE_CHARS)
        .collect();
    if truncated || text.chars().nth(LINE_CHARS).is_some() {
        out.push('…');
    }
    out
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

    #[test]
    fn tallies_of_the_common_runners_parse() {
        let cargo = Tally::parse("test result: FAILED. 10 passed; 2 failed; 1 ignored; 0 measured");
        assert_eq!(
            cargo,
            Some(Tally {
                runs: 1,
                passed: 10,
                failed: 2,
                skipped: 1
            })
        );
        let pytest = Tally::parse("==== 3 failed, 47 passed, 2 skipped in 1.23s ====");
        assert_eq!(
            pytest.map(|t| (t.passed, t.failed, t.skipped)),
            Some((47, 3, 2))
        );
        assert_eq!(Tally::parse("nothing to see"), None);
    }

    #[test]
    fn long_lines_are_clipped_with_a_mark() {
        let long = "é".repeat(600);
        let text = clean_line(&long.as_bytes()[..LINE_KEEP], true);
        assert_eq!(text.chars().count(), LINE_CHARS + 1);
        assert!(text.ends_with('…'));
        assert_eq!(clean_line(b"short\r", false), "short");
    }
}
