//! The pre-tokenizers' split where ASCII bytes alone decide it, byte by
//! byte: most pieces of logs, code and JSON. In ASCII, `\p{L}` is
//! `[A-Za-z]` (and no capital is also one of o200k_base's lower-case
//! class), `\p{N}` is `[0-9]` and `\s` is tab, LF, VT, FF, CR and space.
//!
//! A piece is left to [`super::pieces`] (`None`) as soon as a byte beyond
//! ASCII stands where a class is asked: a word might go on with `é`, a
//! number with `٣`, whitespace with a no-break space, a contraction might be
//! `'ſ`.

use super::Encoding;

fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

fn is_newline(b: u8) -> bool {
    b == b'\r' || b == b'\n'
}

/// `[^\s\p{L}\p{N}]` of an ASCII byte.
fn is_other(b: u8) -> bool {
    b.is_ascii() && !b.is_ascii_alphanumeric() && !is_space(b)
}

/// `[^\r\n\p{L}\p{N}]` of an ASCII byte.
fn is_prefix(b: u8) -> bool {
    b.is_ascii() && !b.is_ascii_alphanumeric() && !is_newline(b)
}

/// The end of the run of `class` bytes from `at`; `None` when it stops at
/// a byte beyond ASCII, which might belong to the class.
fn run(text: &[u8], at: usize, class: impl Fn(u8) -> bool) -> Option<usize> {
    let end = text[at..]
        .iter()
        .position(|&b| !class(b))
        .map_or(text.len(), |n| at + n);
    (end == text.len() || text[end].is_ascii()).then_some(end)
}

/// The end of the piece that starts at `at` (< `text.len()`), as
/// [`super::pieces::next_piece`] has it, when ASCII bytes decide it.
#[inline]
pub(super) fn ascii_piece(encoding: Encoding, text: &[u8], at: usize) -> Option<usize> {
    let first = text[at];
    if !first.is_ascii() {
        return None;
    }
    let next = text.get(at + 1).copied();
    if next.is_some_and(|b| !b.is_ascii()) && is_prefix(first) {
        return None; // a word (or a contraction) may start with it
    }
    if encoding == Encoding::Cl100kBase && first == b'\'' {
        let end = contraction(text, at)?;
        if end > at {
            return Some(end);
        }
    }
    // A word, with one character before it that is no letter, digit or line end.
    let word = if is_prefix(first) && next.is_some_and(|b| b.is_ascii_alphabetic()) {
        at + 1
    } else {
        at
    };
    if text[word].is_ascii_alphabetic() {
        return match encoding {
            // Capitals, then lower case, then an English contraction.
            Encoding::O200kBase => {
                let upper = run(text, word, |b| b.is_ascii_uppercase())?;
                contraction(text, run(text, upper, |b| b.is_ascii_lowercase())?)
            }
            Encoding::Cl100kBase => run(text, word, |b| b.is_ascii_alphabetic()),
        };
    }
    if first.is_ascii_digit() {
        let digits = text[at..]
            .iter()
            .take(3)
            .take_while(|b| b.is_ascii_digit())
            .count();
        let end = at + digits;
        // Fewer than three, stopped by a wide character: it may be a digit.
        return (digits == 3 || end == text.len() || text[end].is_ascii()).then_some(end);
    }
    // Punctuation, after at most one space, with the line ends (and in o200k_base slashes) after it.
    let marks = if first == b' ' && next.is_some_and(is_other) {
        at + 1
    } else {
        at
    };
    if is_other(text[marks]) {
        let end = run(text, marks, is_other)?;
        let tail = text[end..]
            .iter()
            .take_while(|&&b| match encoding {
                Encoding::O200kBase => is_newline(b) || b == b'/',
                Encoding::Cl100kBase => is_newline(b),
            })
            .count();
        return Some(end + tail);
    }
    // Whitespace: through its last line end; else all of it at the end of
    // the text; else all but its last character (left to lead the next
    // piece); else the one character.
    let end = run(text, at, is_space)?;
    if let Some(last_newline) = text[at..end].iter().rposition(|&b| is_newline(b)) {
        return Some(at + last_newline + 1);
    }
    if end == text.len() || end - at == 1 {
        return Some(end);
    }
    Some(end - 1)
}

/// The end of `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `at`, or `at` when there
/// is none; `None` when a byte beyond ASCII follows the apostrophe (`'ſ`).
fn contraction(text: &[u8], at: usize) -> Option<usize> {
    if text.get(at) != Some(&b'\'') {
        return Some(at);
    }
    let lower = |i: usize| text.get(i).map(u8::to_ascii_lowercase);
    Some(match lower(at + 1) {
        Some(b) if !b.is_ascii() => return None,
        Some(b's' | b't' | b'm' | b'd') => at + 2,
        Some(b'r' | b'v') if lower(at + 2) == Some(b'e') => at + 3,
        Some(b'l') if lower(at + 2) == Some(b'l') => at + 3,
        _ => at,
    })
}
