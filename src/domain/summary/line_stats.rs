//! What the frame scan keeps of the lines it judged: counts by level, the
//! first and last lines of each with their numbers, test-runner tallies,
//! and how a kept line is cleaned for display.

use super::signal::{Level, classify};

/// Bytes of a line kept for display (over 200 characters in any encoding).
pub const LINE_KEEP: usize = 1024;
/// Characters of a line shown.
pub const LINE_CHARS: usize = 200;
/// Example lines kept per level.
pub const EXAMPLES: usize = 8;

/// Flag of a line that has a word some verdict needs: the line is judged by
/// [`signal::classify`](super::signal::classify).
pub const CANDIDATE: u8 = 1;
/// Flag of a line with the word `passed`.
pub const PASSED: u8 = 1 << Level::Passed as u8;
/// Flag of a cargo `test result:` line, whose figures are added up.
pub const TALLY: u8 = 1 << 4;

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

/// The level of a line whose words gave `flags`; `head` is its start.
pub fn judge(flags: u8, head: &[u8]) -> Option<Level> {
    let judged = if flags & CANDIDATE != 0 {
        classify(head)
    } else {
        None
    };
    judged.or((flags & PASSED != 0).then_some(Level::Passed))
}

/// Lines by level, the first few and the last of each with their numbers,
/// and tallies.
#[derive(Clone, Debug, Default)]
pub struct LineStats {
    /// Lines per [`Level`].
    pub counts: [u64; 4],
    /// The first [`EXAMPLES`] lines of each level but `Passed`: (number, text).
    pub examples: [Vec<(u64, String)>; 3],
    /// The last line of each level but `Passed`, when it is not among `examples`.
    pub last: [Option<(u64, String)>; 3],
    /// Sum of the cargo `test result:` lines.
    pub tally: Tally,
}

impl LineStats {
    /// Counts one line of `flags` (judged here); `head` is its start (at
    /// most [`LINE_KEEP`] bytes).
    pub fn add_line(&mut self, number: u64, flags: u8, head: &[u8], truncated: bool) {
        let level = judge(flags, head);
        self.add_judged_keeping_last(number, level, flags, head, truncated);
    }

    /// Counts one line already judged to be of `level`; false when it is of
    /// a shown level but not kept among the examples (it may be the last).
    pub(super) fn add_judged(
        &mut self,
        number: u64,
        level: Option<Level>,
        flags: u8,
        head: &[u8],
        truncated: bool,
    ) -> bool {
        if flags & TALLY != 0
            && let Some(tally) = Tally::parse(&String::from_utf8_lossy(head))
        {
            self.tally.add(&tally);
        }
        let Some(level) = level else {
            return true;
        };
        let level = level as usize;
        self.counts[level] += 1;
        match self.examples.get_mut(level) {
            Some(examples) if examples.len() < EXAMPLES => {
                examples.push((number, clean_line(head, truncated)));
                true
            }
            Some(_) => false,
            None => true,
        }
    }

    /// [`add_judged`](Self::add_judged), keeping the line as the last of its
    /// level when it is not an example.
    fn add_judged_keeping_last(
        &mut self,
        number: u64,
        level: Option<Level>,
        flags: u8,
        head: &[u8],
        truncated: bool,
    ) {
        if !self.add_judged(number, level, flags, head, truncated)
            && let Some(level) = level
        {
            self.last[level as usize] = Some((number, clean_line(head, truncated)));
        }
    }

    /// The lines of `level` kept: the first ones, then the last.
    pub fn shown(&self, level: Level) -> Vec<(u64, String)> {
        let Some(examples) = self.examples.get(level as usize) else {
            return Vec::new();
        };
        let mut lines = examples.clone();
        lines.extend(self.last[level as usize].clone());
        lines
    }

    /// Adds the stats of later lines, numbered from `offset`.
    pub fn merge(&mut self, later: &Self, offset: u64) {
        for (count, more) in self.counts.iter_mut().zip(later.counts) {
            *count += more;
        }
        for level in 0..3 {
            let kept = &mut self.examples[level];
            let more = &later.examples[level];
            let room = EXAMPLES.saturating_sub(kept.len()).min(more.len());
            kept.extend(more[..room].iter().map(|(n, t)| (n + offset, t.clone())));
            let beyond = later.last[level].as_ref().or(more[room..].last());
            if let Some((n, text)) = beyond {
                self.last[level] = Some((n + offset, text.clone()));
            }
        }
        self.tally.add(&later.tally);
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
