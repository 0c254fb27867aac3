//! Exact counts without the regex engine on the common case: ASCII text.
//!
//! bpe-openai pre-tokenizes with a Unicode regex (one anchored search per
//! piece) and then runs a fresh BPE encoder, with its allocations, on every
//! piece. For ASCII text the pre-tokenizer regexes of o200k_base and
//! cl100k_base reduce to a few byte classes, so [`next_piece`] splits exactly
//! as they do with a hand-written scan, and [`piece_count`] remembers the BPE
//! count of short pieces (words, punctuation, indentation), which repeat all
//! through logs, code and prose. Text that is not ASCII is cut at places
//! where the pre-tokenizer cuts anyway ([`super::stream::last_safe_cut`]):
//! its ASCII stretches take this path, the rest goes through bpe-openai.
//!
//! The tests compare every count with bpe-openai's own on random ASCII
//! (every byte value below 128), on mixed Unicode text and on the reference
//! strings.

use std::cell::RefCell;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Encoding;
use super::stream::last_safe_cut;

/// Tokens of `text` with `encoding`: the same figure as bpe-openai's count.
pub(super) fn count(encoding: Encoding, text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut total = 0;
    let mut start = 0;
    while start < bytes.len() {
        let rest = &bytes[start..];
        let Some(first_wide) = rest.iter().position(|b| !b.is_ascii()) else {
            return total + count_ascii(encoding, rest);
        };
        // ASCII up to the last cut before the first wide character...
        let cut = last_safe_cut(&rest[..first_wide]).unwrap_or(0);
        total += count_ascii(encoding, &rest[..cut]);
        // ...and the stretch from there to the next cut after it, through the library.
        let next = next_safe_cut(rest, first_wide).unwrap_or(rest.len());
        // Cuts fall before ASCII bytes, hence on character boundaries.
        let Some(stretch) = text.get(start + cut..start + next) else {
            return encoding.tokenizer().count(text);
        };
        total += encoding.tokenizer().count(stretch);
        start += next;
    }
    total
}

/// The first place after `from` where the pre-tokenizer cuts anyway (see
/// [`last_safe_cut`]).
fn next_safe_cut(bytes: &[u8], from: usize) -> Option<usize> {
    memchr::memchr_iter(b'\n', &bytes[from..])
        .map(|newline| from + newline + 1)
        .find(|&cut| bytes.get(cut).is_some_and(u8::is_ascii_alphanumeric))
}

/// Tokens of ASCII `text`.
fn count_ascii(encoding: Encoding, text: &[u8]) -> usize {
    let mut total = 0;
    let mut start = 0;
    while start < text.len() {
        let end = next_piece(encoding, text, start);
        total += piece_count(encoding, &text[start..end]);
        start = end;
    }
    total
}

/// Slots of the shared table of short pieces (a power of two): 64 KiB, so
/// that it stays in a core's L2 cache beside the BPE tables.
const SHORT_SLOTS: usize = 1 << 13;
/// Longest piece of the shared table: its bytes and a tag byte fit one `u64`.
const SHORT_MAX: usize = 7;
/// Slots of each thread's table of longer pieces: 64 KiB a thread.
const LONG_SLOTS: usize = 1 << 11;
/// Longest piece of the per-thread tables: its bytes and its tag fit a `u128`.
const LONG_MAX: usize = 15;
/// The bits of a [`SHORT`] slot that identify its piece (all but the count).
const SHORT_KEY_BITS: u64 = !(0xF0 << 56);

/// BPE counts of pieces up to [`SHORT_MAX`] bytes, shared by all threads
/// (the pieces that repeat most: words, numbers, punctuation, indentation).
/// Direct-mapped: a slot holds the last piece that hashed to it, in one
/// word: the piece's bytes, then a tag byte with its length (bits 0–2), the
/// encoding (bit 3) and its count (bits 4–7; a piece has at most a token a
/// byte). 0 is an empty slot: a piece has at least one byte.
static SHORT: LazyLock<Box<[AtomicU64]>> =
    LazyLock::new(|| (0..SHORT_SLOTS).map(|_| AtomicU64::new(0)).collect());

/// A table of longer pieces: (piece bytes and tag, count) per slot.
type LongTable = Option<Box<[(u128, u32)]>>;

thread_local! {
    /// Counts of pieces of 8 to [`LONG_MAX`] bytes, per thread (they do not
    /// fit one atomic word), direct-mapped like [`SHORT`]; allocated on first use.
    static LONG: RefCell<LongTable> = const { RefCell::new(None) };
}

/// The slot of `key` in a table of `slots` entries (a power of two).
fn slot_of(key: u64, slots: usize) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - slots.trailing_zeros())) as usize
}

/// The BPE count of one pre-tokenized piece, remembered when it is short.
fn piece_count(encoding: Encoding, piece: &[u8]) -> usize {
    let bpe = &encoding.tokenizer().bpe;
    let cl100k = u8::from(encoding == Encoding::Cl100kBase);
    if piece.len() <= SHORT_MAX {
        let mut bytes = [0u8; 8];
        bytes[..piece.len()].copy_from_slice(piece);
        bytes[7] = piece.len() as u8 | (cl100k << 3);
        let key = u64::from_le_bytes(bytes);
        let slot = &SHORT[slot_of(key, SHORT_SLOTS)];
        let held = slot.load(Ordering::Relaxed);
        if held & SHORT_KEY_BITS == key {
            return (held >> 60) as usize;
        }
        let count = bpe.count(piece);
        slot.store(key | ((count as u64) << 60), Ordering::Relaxed);
        return count;
    }
    if piece.len() > LONG_MAX {
        return bpe.count(piece);
    }
    let mut bytes = [0u8; 16];
    bytes[..piece.len()].copy_from_slice(piece);
    bytes[15] = piece.len() as u8 | (cl100k << 4);
    let key = u128::from_le_bytes(bytes);
    LONG.with(|table| {
        let mut table = table.borrow_mut();
        let table = table.get_or_insert_with(|| vec![(0, 0); LONG_SLOTS].into_boxed_slice());
        let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(29);
        let entry = &mut table[slot_of(folded, LONG_SLOTS)];
        if entry.0 != key {
            *entry = (key, bpe.count(piece) as u32);
        }
        entry.1 as usize
    })
}

// Byte classes of the pre-tokenizer regexes, restricted to ASCII: \p{L} is
// [A-Za-z] (\p{Lt}, \p{Lm}, \p{Lo} and \p{M} have no ASCII members), \p{N}
// is [0-9] and \s is Unicode White_Space: tab, LF, VT, FF, CR and space.

fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

fn is_newline(b: u8) -> bool {
    b == b'\r' || b == b'\n'
}

/// `[^\s\p{L}\p{N}]`: punctuation, symbols and control characters.
fn is_other(b: u8) -> bool {
    !b.is_ascii_alphanumeric() && !is_space(b)
}

/// `[^\r\n\p{L}\p{N}]`: what may stand before a word.
fn is_prefix(b: u8) -> bool {
    !b.is_ascii_alphanumeric() && !is_newline(b)
}

/// The end of the run of bytes matching `class` from `at`.
fn run(text: &[u8], at: usize, class: impl Fn(u8) -> bool) -> usize {
    text[at..]
        .iter()
        .position(|&b| !class(b))
        .map_or(text.len(), |n| at + n)
}

/// The end of the piece that starts at `at` (< `text.len()`), as the
/// encoding's pre-tokenizer regex splits ASCII text. The regexes are tried
/// as the regex engine does (leftmost-first: the first alternative that
/// matches wins, each quantifier greedy); see bpe-openai's patterns:
///
/// o200k_base: `[^\r\n\p{L}\p{N}]?[\p{Lu}…]*[\p{Ll}…]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
/// | `[^\r\n\p{L}\p{N}]?[\p{Lu}…]+[\p{Ll}…]*(?i:'s|…)?` | `\p{N}{1,3}`
/// | ` ?[^\s\p{L}\p{N}]+[\r\n/]*` | `\s*[\r\n]+` | `\s+$`, then `\s+\s` less
/// its last character, then `\s+`.
///
/// cl100k_base: `(?i:'s|'t|'re|'ve|'m|'ll|'d)` | `[^\r\n\p{L}\p{N}]?\p{L}+`
/// | `\p{N}{1,3}` | ` ?[^\s\p{L}\p{N}]+[\r\n]*` | the same whitespace rules.
fn next_piece(encoding: Encoding, text: &[u8], at: usize) -> usize {
    let first = text[at];
    if encoding == Encoding::Cl100kBase && first == b'\'' {
        let end = contraction(text, at);
        if end > at {
            return end;
        }
    }
    // A word, with one character before it that is no letter, digit or line end.
    let word = if is_prefix(first) && text.get(at + 1).is_some_and(u8::is_ascii_alphabetic) {
        at + 1
    } else {
        at
    };
    if text[word].is_ascii_alphabetic() {
        return match encoding {
            // Capitals, then lower case, then an English contraction.
            Encoding::O200kBase => {
                let upper = run(text, word, |b| b.is_ascii_uppercase());
                contraction(text, run(text, upper, |b| b.is_ascii_lowercase()))
            }
            Encoding::Cl100kBase => run(text, word, |b| b.is_ascii_alphabetic()),
        };
    }
    if first.is_ascii_digit() {
        return run(text, at, |b| b.is_ascii_digit()).min(at + 3);
    }
    // Punctuation, after at most one space, with the line ends (and in o200k_base slashes) after it.
    let marks = if first == b' ' && text.get(at + 1).is_some_and(|&b| is_other(b)) {
        at + 1
    } else {
        at
    };
    if is_other(text[marks]) {
        let end = run(text, marks, is_other);
        return match encoding {
            Encoding::O200kBase => run(text, end, |b| is_newline(b) || b == b'/'),
            Encoding::Cl100kBase => run(text, end, is_newline),
        };
    }
    // Whitespace: through its last line end; else all of it at the end of
    // the text; else all but its last character (left to lead the next
    // piece); else the one character.
    let end = run(text, at, is_space);
    if let Some(last_newline) = text[at..end].iter().rposition(|&b| is_newline(b)) {
        return at + last_newline + 1;
    }
    if end == text.len() || end - at == 1 {
        return end;
    }
    end - 1
}

/// The end of `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `at`, or `at` when there is none.
fn contraction(text: &[u8], at: usize) -> usize {
    let lower = |i: usize| text.get(i).map(u8::to_ascii_lowercase);
    if text.get(at) != Some(&b'\'') {
        return at;
    }
    match lower(at + 1) {
        Some(b's' | b't' | b'm' | b'd') => at + 2,
        Some(b'r' | b'v') if lower(at + 2) == Some(b'e') => at + 3,
        Some(b'l') if lower(at + 2) == Some(b'l') => at + 3,
        _ => at,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const ENCODINGS: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

    /// The pieces of ASCII `text` by [`next_piece`].
    fn pieces(encoding: Encoding, text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < text.len() {
            let end = next_piece(encoding, text.as_bytes(), start);
            out.push(&text[start..end]);
            start = end;
        }
        out
    }

    fn assert_same_split(text: &str) {
        for encoding in ENCODINGS {
            let library: Vec<&str> = encoding.tokenizer().split(text).collect();
            assert_eq!(pieces(encoding, text), library, "{encoding:?} on {text:?}");
        }
    }

    fn assert_same_count(text: &str) {
        for encoding in ENCODINGS {
            assert_eq!(
                count(encoding, text),
                encoding.tokenizer().count(text),
                "{encoding:?} on {text:?}"
            );
        }
    }

    #[test]
    fn the_split_of_tricky_ascii_equals_the_regex_split() {
        for text in [
            "Hello World",
            "HELLO world's THEY'RE we'LL I'd 'sam' 'S",
            "((hello)) !!\n/usr/bin/env\n!\n/x",
            "  \n  x\t\ty \x0b\x0cz  ",
            "  trailing   ",
            "a1234567b 12 345 6789",
            "\r\n\r\n  \r  \n",
            "foo/bar//baz: x = [1, 2]; // comment\n",
            "ABcD eFGh iJ",
            "\x00\x01\x7f abc\x1f\x1e ",
            " ' '' ''' 're 've 'll",
            " ",
            "x",
        ] {
            assert_same_split(text);
            assert_same_count(text);
        }
    }

    #[test]
    fn counts_of_mixed_unicode_text_equal_the_library() {
        let text = "fn main() {\n    println!(\"héllo\");\n}\nÜnïcödé — ✓ 日本語\nnext line\n\
                    path/to/file.rs:12:5: error\n😀👍🏽 emoji\nplain ascii again\nend";
        assert_same_count(text);
        assert_same_count(&text.repeat(50));
        assert_same_count("日本語だけ");
        assert_same_count("");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_ascii_splits_and_counts_as_the_library(text in "[\\x00-\\x7f]{0,200}") {
            assert_same_split(&text);
            assert_same_count(&text);
        }

        /// Words, digits, punctuation and whitespace shapes, more like real text.
        #[test]
        fn random_texty_ascii_splits_as_the_library(
            text in "([A-Za-z]{1,8}|[0-9]{1,6}|[ \\t\\r\\n]{1,4}|['/.,:;!(){}\\[\\]\"-]{1,3}|'(s|t|re|ve|m|ll|d|S|LL)){0,60}"
        ) {
            assert_same_split(&text);
            assert_same_count(&text);
        }

        #[test]
        fn random_mixed_text_counts_as_the_library(
            text in "([a-z]{1,6}|[ \\n]|é|日本|😀|[0-9]{1,4}|[.!/]){0,80}"
        ) {
            assert_same_count(&text);
        }
    }
}
