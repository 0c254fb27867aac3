//! Token-budgeted slices: from a line (or a byte offset inside one), the
//! longest run of whole lines whose exact token count fits a budget.
//!
//! A first line longer than the budget is cut at a token boundary and the
//! slice says `truncated`; its `next` continues inside that line as
//! `mem://<id>?offset=<n>&max_tokens=<t>`. A slice that ends at a line end
//! continues as `mem://<id>?max_tokens=<t>#L<n>-`. Pages follow each other
//! byte for byte, so concatenating them gives back the content. The byte cap
//! of every slice (`max_slice_bytes`) still holds.

use crate::domain::DomainError;
use crate::domain::memories::ids::MemoryId;
use crate::domain::memories::read::ObjectReader;
use crate::domain::memories::read::slicing::{Slice, SliceLimits, SliceTokens, utf8_boundary};
use crate::domain::tokens::Counter;

/// The smallest budget: enough for any one character (at most 4 bytes, so
/// at most 4 byte-level tokens), so every page moves forward.
pub const MIN_TOKENS: u64 = 16;

/// A token budget and how tokens are counted against it.
#[derive(Clone, Copy, Debug)]
pub struct TokenBudget {
    /// Most tokens in the slice.
    pub max_tokens: u64,
    /// The counter (the model's encoding, or a labelled estimate).
    pub counter: Counter,
}

impl TokenBudget {
    /// A budget of `max_tokens` counted for `model` (o200k_base without one).
    pub fn new(max_tokens: u64, model: Option<&str>) -> Result<Self, DomainError> {
        if max_tokens < MIN_TOKENS {
            return Err(DomainError::InvalidRange(format!(
                "`max_tokens` must be at least {MIN_TOKENS} (got {max_tokens})"
            )));
        }
        Ok(Self {
            max_tokens,
            counter: Counter::for_model(model),
        })
    }

    fn count(&self, bytes: &[u8]) -> u64 {
        self.counter.count(&String::from_utf8_lossy(bytes))
    }
}

/// Where a token-budgeted slice starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// At the start of this line (1-based).
    Line(u64),
    /// At this content offset, possibly inside a line.
    Offset(u64),
}

/// The slice from `start` that fits `budget`: whole lines up to line `end`
/// (or `max_slice_lines` of them), or the head of one line cut at a token
/// boundary.
pub async fn within(
    reader: &mut ObjectReader,
    id: &MemoryId,
    start: Start,
    end: Option<u64>,
    budget: &TokenBudget,
    limits: &SliceLimits,
) -> Result<Slice, DomainError> {
    let (size, total) = (reader.size(), reader.lines());
    let (offset, line) = match start {
        Start::Line(0) => {
            return Err(DomainError::InvalidRange(
                "lines are numbered from 1: `start` must be at least 1".into(),
            ));
        }
        Start::Line(line) if line > total.max(1) => {
            return Err(DomainError::InvalidRange(format!(
                "line {line} is past the end: the memory has {total} lines"
            )));
        }
        Start::Line(line) => (
            reader.line_start(line, limits.max_bytes as usize).await?,
            line,
        ),
        Start::Offset(offset) if offset > size => {
            return Err(DomainError::InvalidRange(format!(
                "offset {offset} is past the end: the memory has {size} bytes"
            )));
        }
        Start::Offset(offset) => (offset, reader.line_at(offset).await?),
    };
    let at_line_start = match start {
        Start::Line(_) => true,
        Start::Offset(offset) => {
            offset == 0 || reader.read(offset - 1, 1).await?.first() == Some(&b'\n')
        }
    };
    if let Some(end) = end.filter(|&end| end < line) {
        return Err(DomainError::InvalidRange(format!(
            "`end` ({end}) is before `start` ({line})"
        )));
    }
    let wanted = end
        .map_or(limits.max_lines, |end| end - line + 1)
        .min(limits.max_lines);
    let window = reader.read(offset, limits.max_bytes).await?;
    let reaches_end = offset + window.len() as u64 >= size;
    let ends = line_ends(&window, wanted as usize, reaches_end);
    let (kept, tokens) = fit_lines(&window, &ends, budget);
    let (content_len, cut) = match kept {
        0 if window.is_empty() => (0, false),
        0 => {
            let line_len = ends.first().copied().unwrap_or(window.len());
            let (len, _) = cut_line(&window[..utf8_boundary(&window[..line_len])], budget);
            (len, true)
        }
        k => (ends[k - 1], false),
    };
    let content = window.slice(..content_len);
    let tokens = if kept == 0 {
        budget.count(&content)
    } else {
        tokens
    };
    let stop = offset + content_len as u64;
    let at_line_end = content.last() == Some(&b'\n');
    let last = line + memchr::memchr_iter(b'\n', &content).count() as u64 - u64::from(at_line_end);
    // Whole lines stopped by the byte cap, not by the budget or the line count.
    let capped = kept > 0 && kept == ends.len() && ends.len() < wanted as usize && !reaches_end;
    let next = (stop < size).then(|| match at_line_end {
        true => format!("mem://{id}?max_tokens={}#L{}-", budget.max_tokens, last + 1),
        false => format!("mem://{id}?offset={stop}&max_tokens={}", budget.max_tokens),
    });
    Ok(Slice {
        id: id.clone(),
        start: line,
        end: last.max(line),
        offset,
        content,
        total_lines: total,
        total_bytes: size,
        truncated: cut || capped,
        next,
        chunk: None,
        tokens: Some(SliceTokens {
            count: tokens,
            method: budget.counter.method(),
            whole_lines: at_line_start && (at_line_end || stop == size),
        }),
    })
}

/// End offsets (exclusive) of the first `most` whole lines of `window`; the
/// content's last line counts even without a newline when `reaches_end`.
fn line_ends(window: &[u8], most: usize, reaches_end: bool) -> Vec<usize> {
    let mut ends: Vec<usize> = memchr::memchr_iter(b'\n', window)
        .take(most)
        .map(|pos| pos + 1)
        .collect();
    let tail = ends.last().copied().unwrap_or(0);
    if reaches_end && ends.len() < most && tail < window.len() {
        ends.push(window.len());
    }
    ends
}

/// The most lines of `window` (ending at `ends`) whose text counts at most
/// the budget, and that count. Per-line counts give the first guess (a text
/// counts about the sum of its lines); exact counts of the whole prefix
/// decide, by bisection from that guess.
fn fit_lines(window: &[u8], ends: &[usize], budget: &TokenBudget) -> (usize, u64) {
    let max = budget.max_tokens;
    let mut guess = 0;
    let mut sum = 0;
    for (i, &end) in ends.iter().enumerate() {
        let begin = if i == 0 { 0 } else { ends[i - 1] };
        sum += budget.count(&window[begin..end]);
        if sum > max {
            break;
        }
        guess = i + 1;
    }
    let count = |k: usize| budget.count(&window[..ends[k - 1]]);
    // `fits` holds a count within the budget, `over` the fewest lines known not to fit.
    let (mut fits, mut fits_tokens, mut over) = (0, 0, ends.len() + 1);
    for probe in [guess, guess + 1] {
        if probe == 0 || probe > ends.len() || probe >= over || probe <= fits {
            continue;
        }
        match count(probe) {
            tokens if tokens <= max => (fits, fits_tokens) = (probe, tokens),
            _ => over = probe,
        }
    }
    while over - fits > 1 {
        let mid = fits + (over - fits) / 2;
        match count(mid) {
            tokens if tokens <= max => (fits, fits_tokens) = (mid, tokens),
            _ => over = mid,
        }
    }
    (fits, fits_tokens)
}

/// The head of `line` that fits the budget, cut at a token boundary (for an
/// exact counter on UTF-8 text) or at a character boundary; at least one
/// character, so a page always moves forward.
fn cut_line(line: &[u8], budget: &TokenBudget) -> (usize, u64) {
    let max = budget.max_tokens;
    let whole = budget.count(line);
    if whole <= max {
        return (line.len(), whole);
    }
    if let (Some(encoding), Ok(text)) = (budget.counter.encoding(), std::str::from_utf8(line)) {
        let heads = encoding.token_ends(text, max as usize);
        // The head of `max` tokens nearly always counts `max` again; a few
        // shorter heads cover the rare text whose prefix encodes longer.
        for &bytes in heads.iter().rev().take(8) {
            let mut cut = bytes.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let tokens = budget.count(&line[..cut]);
            if cut > 0 && tokens <= max {
                return (cut, tokens);
            }
        }
    }
    // Bisection on the length, at the ends of UTF-8 sequences.
    let (mut fits, mut fits_tokens, mut over) = (0, 0, line.len());
    while over - fits > 1 {
        let mid = utf8_boundary(&line[..fits + (over - fits) / 2]);
        if mid <= fits {
            break;
        }
        match budget.count(&line[..mid]) {
            tokens if tokens <= max => (fits, fits_tokens) = (mid, tokens),
            _ => over = mid,
        }
    }
    if fits == 0 {
        let first = line
            .iter()
            .skip(1)
            .position(|b| b & 0xC0 != 0x80)
            .map_or(line.len(), |p| p + 1);
        return (first, budget.count(&line[..first]));
    }
    (fits, fits_tokens)
}
