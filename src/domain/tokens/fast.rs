//! Exact counts without the regex engine: pieces split by hand
//! ([`super::pieces`]) and the BPE counts of short pieces remembered.
//!
//! bpe-openai pre-tokenizes with a Unicode regex (one anchored search per
//! piece) and then runs a fresh BPE encoder, with its allocations, on every
//! piece. Here [`next_piece`] splits exactly as the regex does with a
//! hand-written scan, and [`piece_count`] remembers the BPE count of short
//! pieces (words, punctuation, indentation), which repeat all through logs,
//! code and prose, and of runs of spaces (deep indentation, aligned columns).
//!
//! The tests compare every count with bpe-openai's own on random ASCII
//! (every byte value below 128), on mixed Unicode text and on the reference
//! strings.

use std::cell::RefCell;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::Encoding;
use super::pieces::next_piece;

/// Tokens of `text` with `encoding`: the same figure as bpe-openai's count.
pub(super) fn count(encoding: Encoding, text: &str) -> usize {
    let text = text.as_bytes();
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

/// Longest run of spaces whose count [`SPACES`] keeps.
const SPACES_MAX: usize = 256;

/// BPE counts of runs of spaces longer than [`LONG_MAX`] by length, per
/// encoding (0: not counted yet): deep indentation and aligned columns.
static SPACES: [[AtomicU32; SPACES_MAX + 1]; 2] =
    [const { [const { AtomicU32::new(0) }; SPACES_MAX + 1] }; 2];

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
        if piece.len() <= SPACES_MAX && piece.iter().all(|&b| b == b' ') {
            let slot = &SPACES[usize::from(cl100k)][piece.len()];
            let held = slot.load(Ordering::Relaxed);
            if held != 0 {
                return held as usize;
            }
            let count = bpe.count(piece);
            slot.store(u32::try_from(count).unwrap_or(0), Ordering::Relaxed);
            return count;
        }
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const ENCODINGS: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

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
    fn counts_of_tricky_ascii_equal_the_library() {
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

    #[test]
    fn runs_of_spaces_count_as_the_library_again_and_again() {
        // Counted once, then remembered: the second pass reads the memo.
        for _ in 0..2 {
            for n in [16, 17, 31, 64, 255, 256, 257, 600] {
                let text = format!("{{\n{}\"key\": 1\n{}x", " ".repeat(n), " ".repeat(n + 1));
                assert_same_count(&text);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_ascii_counts_as_the_library(text in "[\\x00-\\x7f]{0,200}") {
            assert_same_count(&text);
        }

        /// Words, digits, punctuation and whitespace shapes, more like real text.
        #[test]
        fn random_texty_ascii_counts_as_the_library(
            text in "([A-Za-z]{1,8}|[0-9]{1,6}|[ \\t\\r\\n]{1,4}|['/.,:;!(){}\\[\\]\"-]{1,3}|'(s|t|re|ve|m|ll|d|S|LL)){0,60}"
        ) {
            assert_same_count(&text);
        }

        #[test]
        fn random_mixed_text_counts_as_the_library(
            text in "([a-z]{1,6}|[ \\n]{1,20}|é|日本|😀|[0-9]{1,4}|[.!/]|\\p{L}|\\p{M}|\\p{N}|\\p{Z}){0,80}"
        ) {
            assert_same_count(&text);
        }
    }
}
