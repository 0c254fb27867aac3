//! Laying a summary out within its character cap: a header with the kind,
//! counts and pointer, then free lines and numbered content lines.

use super::SummaryFacts;
use super::detect::Kind;

/// `n word` or `n words`.
fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// How a summary's first line states a token count: `12 tokens (exact:o200k_base)`.
fn token_phrase(tokens: u64, method: &str) -> String {
    format!("{} ({method})", plural(tokens, "token"))
}

/// `summary` with its first line's count of `before` tokens counted by
/// `before_method` restated as `tokens` counted by `method` (an estimate
/// made exact after the put); at most `max_chars` characters, as
/// [`Doc::render`] cut it. `None` when the first line does not state it.
pub fn restate_tokens(
    summary: &str,
    (before, before_method): (u64, &str),
    (tokens, method): (u64, &str),
    max_chars: usize,
) -> Option<String> {
    let first_line = summary.find('\n').unwrap_or(summary.len());
    let old = token_phrase(before, before_method);
    let at = summary[..first_line].find(&old)?;
    let mut restated = format!(
        "{}{}{}",
        &summary[..at],
        token_phrase(tokens, method),
        &summary[at + old.len()..]
    );
    if let Some((cut, _)) = restated.char_indices().nth(max_chars) {
        restated.truncate(cut);
    }
    Some(restated)
}

/// A summary being written.
pub struct Doc {
    kind: &'static str,
    /// Counts and pointer.
    facts: String,
    detail: Option<String>,
    blocks: Vec<Block>,
}

enum Block {
    Text(String),
    Lines(String, Vec<(u64, String)>),
}

impl Doc {
    /// A summary of content of `kind`.
    pub fn new(kind: Kind, facts: &SummaryFacts) -> Self {
        let facts = format!(
            "{}, {}, {} | {}",
            plural(facts.lines, "line"),
            plural(facts.bytes, "byte"),
            token_phrase(facts.tokens, &facts.token_method),
            facts.uri
        );
        Self {
            kind: kind.name(),
            facts,
            detail: None,
            blocks: Vec::new(),
        }
    }

    /// Names the flavour of the kind (`pytest`, `python`, `ls -l`), shown after it.
    pub fn detail(&mut self, detail: impl Into<String>) {
        self.detail = Some(detail.into());
    }

    /// Adds a free line.
    pub fn text(&mut self, line: impl Into<String>) {
        self.blocks.push(Block::Text(line.into()));
    }

    /// Adds a titled run of numbered content lines (nothing when empty).
    pub fn lines(&mut self, title: &str, lines: Vec<(u64, String)>) {
        if !lines.is_empty() {
            self.blocks.push(Block::Lines(title.to_owned(), lines));
        }
    }

    /// The summary, at most `max_chars` characters. Free lines come whole;
    /// numbered lines come whole up to [`LINE_CHARS`] in the order they were
    /// added, as long as they fit: a line that does not fit whole is cut
    /// (marked `…`) when enough of it fits to be worth reading, and the
    /// rest are left out and counted, so a quoted line is never cut to a
    /// stub. Whatever still overflows is cut.
    pub fn render(self, max_chars: usize) -> String {
        let mut out = format!("kind: {}", self.kind);
        if let Some(detail) = &self.detail {
            out.push_str(&format!(" ({detail})"));
        }
        out.push_str(" | ");
        out.push_str(&self.facts);
        let fixed: usize = self
            .blocks
            .iter()
            .map(|block| match block {
                Block::Text(text) => 1 + text.chars().count(),
                Block::Lines(..) => 0,
            })
            .sum();
        let mut room = max_chars.saturating_sub(out.chars().count() + fixed + OMITTED_NOTE);
        let mut omitted = 0usize;
        for block in &self.blocks {
            match block {
                Block::Text(text) => {
                    out.push('\n');
                    out.push_str(text);
                }
                Block::Lines(title, lines) => {
                    let title_cost = if title.is_empty() { 0 } else { title.len() + 2 };
                    let mut titled = title.is_empty();
                    for (number, text) in lines {
                        let prefix = number.to_string().len() + 4; // "\nL" and ": "
                        let cost = title_cost * usize::from(!titled) + prefix;
                        let whole = text.chars().count().min(LINE_CHARS + 1);
                        let fits = room.saturating_sub(cost);
                        if omitted > 0 || fits < whole.min(MIN_CUT) {
                            omitted += 1;
                            continue;
                        }
                        if !titled {
                            out.push_str(&format!("\n{title}:"));
                            titled = true;
                        }
                        let shown = clip(text, fits.min(whole));
                        room = fits - shown.chars().count();
                        out.push_str(&format!("\nL{number}: {shown}"));
                    }
                }
            }
        }
        if omitted > 0 {
            out.push_str(&format!("\n(+{omitted} more lines)"));
        }
        clip(&out, max_chars)
    }
}

/// Characters of a numbered line shown at most (a longer line is cut, marked `…`).
pub const LINE_CHARS: usize = super::line_stats::LINE_CHARS;
/// Characters a cut line keeps at least: a line that would keep fewer is left out.
const MIN_CUT: usize = 60;
/// Room kept for the note counting lines left out.
const OMITTED_NOTE: usize = 20;

/// `text` cut to at most `max` characters, ending in `…` when cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().nth(max).is_none() {
        return text.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// Whitespace runs made single spaces, ends trimmed.
pub fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `n` most frequent items, most frequent first, ties in name order.
pub fn top<K: Ord + Clone>(counts: &std::collections::BTreeMap<K, u64>, n: usize) -> Vec<(K, u64)> {
    let mut all: Vec<(K, u64)> = counts.iter().map(|(k, v)| (k.clone(), *v)).collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    all.truncate(n);
    all
}
