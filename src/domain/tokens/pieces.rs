//! The pre-tokenizers of o200k_base and cl100k_base written out by hand:
//! where a text is cut into the pieces BPE then encodes one by one.
//!
//! bpe-openai splits with one anchored search of a Unicode regex per piece
//! (tiktoken's patterns, with `\s+(?!\S)` rewritten as a look-ahead
//! pattern). Here each alternative of those patterns is matched as the regex
//! engine matches it (leftmost-first: the first alternative that matches
//! wins, quantifiers greedy, giving back what a later part needs), over
//! character classes read from regex-syntax, the crate the regex itself is
//! compiled with, so both agree on every character of the Unicode version
//! they share. Pieces that ASCII bytes alone decide are split byte by byte
//! ([`super::ascii_pieces`]); otherwise ASCII bytes are classified by a
//! table, and other characters decoded and looked up (a table for the Basic
//! Multilingual Plane, a search of ranges above it).
//!
//! The tests compare every split with bpe-openai's own, on ASCII and on text
//! drawn from every class the patterns name.

use std::sync::LazyLock;

use regex_syntax::hir::{Class, HirKind};

use super::Encoding;
use super::ascii_pieces::ascii_piece;

/// `\p{L}`: a letter.
const LETTER: u8 = 1;
/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`: what o200k_base takes as the capitals of a word.
const UPPER: u8 = 1 << 1;
/// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`: what o200k_base takes as the rest of a word.
const LOWER: u8 = 1 << 2;
/// `\p{N}`: a digit or other number.
const NUMBER: u8 = 1 << 3;
/// `\s`: Unicode White_Space.
const SPACE: u8 = 1 << 4;
/// `[\r\n]`.
const NEWLINE: u8 = 1 << 5;

/// The classes of each character, as regex-syntax defines them.
struct Classes {
    /// Flags of the characters below U+10000.
    bmp: Box<[u8]>,
    /// Ranges above U+FFFF with their flags, sorted and disjoint.
    astral: Vec<(u32, u32, u8)>,
}

static CLASSES: LazyLock<Classes> = LazyLock::new(Classes::build);

impl Classes {
    fn build() -> Self {
        let sets = [
            (LETTER, r"\p{L}"),
            (UPPER, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"),
            (LOWER, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"),
            (NUMBER, r"\p{N}"),
            (SPACE, r"\s"),
            (NEWLINE, r"[\r\n]"),
        ];
        let mut bmp = vec![0u8; 0x1_0000].into_boxed_slice();
        // Boundaries of the astral ranges: every range start and end + 1.
        let mut cuts = vec![0x1_0000u32, 0x11_0000];
        let mut astral_sets = Vec::new();
        for (flag, pattern) in sets {
            let ranges = unicode_ranges(pattern);
            for &(start, end) in &ranges {
                for c in start..=end.min(0xFFFF) {
                    bmp[c as usize] |= flag;
                }
                if end >= 0x1_0000 {
                    cuts.extend([start.max(0x1_0000), end + 1]);
                }
            }
            astral_sets.push((flag, ranges));
        }
        cuts.sort_unstable();
        cuts.dedup();
        let mut astral: Vec<(u32, u32, u8)> = Vec::new();
        for pair in cuts.windows(2) {
            let (start, end) = (pair[0], pair[1] - 1);
            // Between two cuts, each set holds all of the window or none of it.
            let flags = astral_sets
                .iter()
                .filter(|(_, ranges)| {
                    let after = ranges.partition_point(|&(_, e)| e < start);
                    ranges.get(after).is_some_and(|&(s, _)| s <= start)
                })
                .fold(0, |acc, (flag, _)| acc | flag);
            match astral.last_mut() {
                Some(last) if last.2 == flags && last.1 + 1 == start => last.1 = end,
                _ if flags == 0 => {}
                _ => astral.push((start, end, flags)),
            }
        }
        Self { bmp, astral }
    }

    fn of(&self, c: u32) -> u8 {
        if let Some(&flags) = self.bmp.get(c as usize) {
            return flags;
        }
        match self.astral.binary_search_by(|&(start, end, _)| {
            if end < c {
                std::cmp::Ordering::Less
            } else if start > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        }) {
            Ok(i) => self.astral[i].2,
            Err(_) => 0,
        }
    }
}

/// The code point ranges of a one-class pattern, as regex-syntax reads it.
fn unicode_ranges(pattern: &str) -> Vec<(u32, u32)> {
    let hir = regex_syntax::Parser::new().parse(pattern);
    match hir.as_ref().map(|hir| hir.kind()) {
        Ok(HirKind::Class(Class::Unicode(class))) => class
            .ranges()
            .iter()
            .map(|r| (u32::from(r.start()), u32::from(r.end())))
            .collect(),
        // The patterns above are constants, each one class: a test parses them.
        _ => Vec::new(),
    }
}

/// ASCII's flags: `\p{L}` is `[A-Za-z]` (capitals `UPPER`, the rest
/// `LOWER`; no ASCII character is Lt, Lm, Lo or M), `\p{N}` is `[0-9]`, and
/// `\s` is tab, LF, VT, FF, CR and space (a test checks the table against
/// the classes).
static ASCII: [u8; 128] = {
    let mut table = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        table[b] = if c.is_ascii_uppercase() {
            LETTER | UPPER
        } else if c.is_ascii_lowercase() {
            LETTER | LOWER
        } else if c.is_ascii_digit() {
            NUMBER
        } else if c == b'\n' || c == b'\r' {
            SPACE | NEWLINE
        } else if matches!(c, b'\t' | 0x0B | 0x0C | b' ') {
            SPACE
        } else {
            0
        };
        b += 1;
    }
    table
};

/// The flags of the character starting at `at` (< `text.len()`, on a
/// character boundary of UTF-8 `text`) and its length in bytes.
#[inline(always)]
fn class_at(text: &[u8], at: usize) -> (u8, usize) {
    let b = text[at];
    if b < 0x80 {
        return (ASCII[b as usize], 1);
    }
    wide_class_at(text, at)
}

/// [`class_at`] for a character beyond ASCII.
#[inline(never)]
fn wide_class_at(text: &[u8], at: usize) -> (u8, usize) {
    let (c, len) = decode(text, at);
    (CLASSES.of(c), len)
}

/// The code point starting at `at` of UTF-8 `text`, and its length.
fn decode(text: &[u8], at: usize) -> (u32, usize) {
    let b = u32::from(text[at]);
    let cont = |i: usize| u32::from(text.get(at + i).copied().unwrap_or(0x80) & 0x3F);
    if b < 0xE0 {
        (((b & 0x1F) << 6) | cont(1), 2)
    } else if b < 0xF0 {
        (((b & 0x0F) << 12) | (cont(1) << 6) | cont(2), 3)
    } else {
        (
            ((b & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
            4,
        )
    }
}

/// Where the character before `at` starts.
fn previous(text: &[u8], at: usize) -> usize {
    let mut i = at - 1;
    while i > 0 && text[i] & 0xC0 == 0x80 {
        i -= 1;
    }
    i
}

/// The end of the run of characters from `at` whose flags have one of `any`.
#[inline(always)]
fn run(text: &[u8], mut at: usize, any: u8) -> usize {
    // ASCII first, a byte at a time.
    while let Some(&b) = text.get(at) {
        if b >= 0x80 {
            break;
        }
        if ASCII[b as usize] & any == 0 {
            return at;
        }
        at += 1;
    }
    while at < text.len() {
        let (flags, len) = class_at(text, at);
        if flags & any == 0 {
            break;
        }
        at += len;
    }
    at
}

/// `[^\r\n\p{L}\p{N}]`: what may stand before a word.
fn is_prefix(flags: u8) -> bool {
    flags & (LETTER | NUMBER | NEWLINE) == 0
}

/// `[^\s\p{L}\p{N}]`: punctuation, symbols, marks and control characters.
fn is_other(flags: u8) -> bool {
    flags & (LETTER | NUMBER | SPACE) == 0
}

/// The end of the piece that starts at `at` (< `text.len()`, a character
/// boundary of UTF-8 `text`), as the encoding's pre-tokenizer splits it:
///
/// o200k_base: `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
/// | `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|…)?`
/// | `\p{N}{1,3}` | ` ?[^\s\p{L}\p{N}]+[\r\n/]*` | `\s*[\r\n]+` | `\s+$`,
/// then `\s+\s` less its last character, then `\s+`.
///
/// cl100k_base: `(?i:'s|'t|'re|'ve|'m|'ll|'d)` | `[^\r\n\p{L}\p{N}]?\p{L}+`
/// | `\p{N}{1,3}` | ` ?[^\s\p{L}\p{N}]+[\r\n]*` | the same whitespace rules.
#[inline]
pub(super) fn next_piece(encoding: Encoding, text: &[u8], at: usize) -> usize {
    match ascii_piece(encoding, text, at) {
        Some(end) => end,
        None => any_piece(encoding, text, at),
    }
}

/// [`next_piece`] for any text, character by character.
fn any_piece(encoding: Encoding, text: &[u8], at: usize) -> usize {
    let (first, len) = class_at(text, at);
    let word = match encoding {
        Encoding::O200kBase => o200k_word(text, at, first, len),
        Encoding::Cl100kBase => cl100k_word(text, at, first, len),
    };
    if let Some(end) = word {
        return end;
    }
    if first & NUMBER != 0 {
        return numbers(text, at);
    }
    let tail = match encoding {
        Encoding::O200kBase => |b: u8| matches!(b, b'\r' | b'\n' | b'/'),
        Encoding::Cl100kBase => |b: u8| matches!(b, b'\r' | b'\n'),
    };
    if let Some(end) = marks(text, at, first, tail) {
        return end;
    }
    whitespace(text, at)
}

/// o200k_base's two word alternatives at `at` (the first character's flags
/// and length given), or `None` when neither matches.
fn o200k_word(text: &[u8], at: usize, first: u8, len: usize) -> Option<usize> {
    // The optional character before the word is tried first, then none:
    // without it only when the first character can begin a word itself (a
    // mark is both).
    let with_prefix = (is_prefix(first) && at + len < text.len()).then_some(at + len);
    let bare = (with_prefix.is_none() || first & (UPPER | LOWER) != 0).then_some(at);
    let starts = [with_prefix, bare];
    // Capitals (none or more), then at least one of the rest: the capitals
    // give back characters, the last first, until one of the rest can start.
    let mut capitals = [0; 2];
    for (i, from) in starts.into_iter().enumerate() {
        let Some(from) = from else { continue };
        capitals[i] = run(text, from, UPPER);
        let mut split = capitals[i];
        if split < text.len() && class_at(text, split).0 & LOWER != 0 {
            return Some(contraction(text, run(text, split, LOWER)));
        }
        // ASCII capitals are none of the rest: nothing to give back.
        if text[from..split].is_ascii() {
            continue;
        }
        while split > from {
            split = previous(text, split);
            if class_at(text, split).0 & LOWER != 0 {
                return Some(contraction(text, run(text, split, LOWER)));
            }
        }
    }
    // At least one capital, then any of the rest (none can follow: the
    // first alternative would have taken it).
    starts.into_iter().zip(capitals).find_map(|(from, end)| {
        from.filter(|&from| end > from)
            .map(|_| contraction(text, end))
    })
}

/// cl100k_base's contraction and word alternatives at `at`.
fn cl100k_word(text: &[u8], at: usize, first: u8, len: usize) -> Option<usize> {
    let contracted = contraction(text, at);
    if contracted > at {
        return Some(contracted);
    }
    if is_prefix(first) && at + len < text.len() && class_at(text, at + len).0 & LETTER != 0 {
        return Some(run(text, at + len, LETTER));
    }
    (first & LETTER != 0).then(|| run(text, at, LETTER))
}

/// `\p{N}{1,3}` at `at`, which starts a number.
fn numbers(text: &[u8], at: usize) -> usize {
    let mut end = at;
    for _ in 0..3 {
        if end >= text.len() {
            break;
        }
        let (flags, len) = class_at(text, end);
        if flags & NUMBER == 0 {
            break;
        }
        end += len;
    }
    end
}

/// ` ?[^\s\p{L}\p{N}]+` then the `tail` bytes, at `at`.
fn marks(text: &[u8], at: usize, first: u8, tail: fn(u8) -> bool) -> Option<usize> {
    let from = if text[at] == b' ' && at + 1 < text.len() && is_other(class_at(text, at + 1).0) {
        at + 1
    } else if is_other(first) {
        at
    } else {
        return None;
    };
    let mut end = from;
    while end < text.len() {
        let (flags, len) = class_at(text, end);
        if !is_other(flags) {
            break;
        }
        end += len;
    }
    Some(end + text[end..].iter().take_while(|&&b| tail(b)).count())
}

/// Whitespace at `at`: through its last line end; else all of it at the end
/// of the text; else all but its last character (left to lead the next
/// piece); else the one character.
fn whitespace(text: &[u8], at: usize) -> usize {
    let end = run(text, at, SPACE);
    // Line ends are ASCII: no byte of a longer character is one.
    if let Some(last) = memchr::memrchr2(b'\n', b'\r', &text[at..end]) {
        return at + last + 1;
    }
    if end == text.len() {
        return end;
    }
    if end == at {
        // Not whitespace: every other character starts a word, a number or
        // marks above. Step over it rather than stall.
        return at + class_at(text, at).1;
    }
    let last = previous(text, end);
    if last > at { last } else { end }
}

/// The end of `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `at`, or `at` when there is
/// none. Case-insensitive as the regex is: Unicode's simple case folding adds
/// only `ſ` (U+017F, long s) to these ASCII letters.
fn contraction(text: &[u8], at: usize) -> usize {
    if text.get(at) != Some(&b'\'') {
        return at;
    }
    let lower = |i: usize| text.get(i).map(u8::to_ascii_lowercase);
    match lower(at + 1) {
        Some(b's' | b't' | b'm' | b'd') => at + 2,
        Some(b'r' | b'v') if lower(at + 2) == Some(b'e') => at + 3,
        Some(b'l') if lower(at + 2) == Some(b'l') => at + 3,
        _ if text[at + 1..].starts_with("ſ".as_bytes()) => at + 3,
        _ => at,
    }
}

#[cfg(test)]
#[path = "pieces_tests.rs"]
mod tests;
