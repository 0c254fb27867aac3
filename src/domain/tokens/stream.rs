//! Token counts of stored contents, counted frame by frame as an upload
//! arrives, with the same total as one pass over the whole text.
//!
//! BPE runs on pre-tokenized pieces, so a text can be cut wherever the
//! pre-tokenizer would cut it anyway. For o200k_base and cl100k_base a `\n`
//! followed by an ASCII letter or digit is such a place: no piece holds a
//! newline and then a letter or digit (letter and number pieces never hold a
//! newline, whitespace pieces hold no letters, punctuation pieces end with
//! their trailing newlines — and, in o200k_base, slashes — so a letter or digit
//! starts a new piece), and the piece ending at the newline is the same whether
//! the text goes on or not. [`StreamCounter`] counts up to the last such place
//! in what it has and carries the rest to the next frame.

use super::{ESTIMATE_METHOD, Encoding, estimate};

/// The encoding stored contents are counted with (gpt-4o's and later models').
pub const CONTENT_ENCODING: Encoding = Encoding::O200kBase;

/// A stored content's token count and how it was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContentTokens {
    /// The count.
    pub tokens: u64,
    /// `exact:o200k_base`, or `estimate:bytes/4` for content too large to
    /// count at put or not UTF-8.
    pub method: &'static str,
}

impl ContentTokens {
    /// The bytes/4 estimate of content of `bytes` bytes.
    pub fn estimated(bytes: u64) -> Self {
        Self {
            tokens: estimate(bytes),
            method: ESTIMATE_METHOD,
        }
    }
}

impl ContentTokens {
    /// Tokens of `text` counted the way this content was: exactly, or estimated.
    pub fn count_alike(&self, text: &str) -> u64 {
        if self.method == ESTIMATE_METHOD {
            estimate(text.len() as u64)
        } else {
            CONTENT_ENCODING.count(text) as u64
        }
    }
}

/// Tokens of a content given as its frames in order: exact with
/// [`CONTENT_ENCODING`] when it is UTF-8 and at most `exact_max` bytes, else
/// the bytes/4 estimate. `digest` (the content's SHA-256, when known) keys the
/// shared count cache, so the same content is counted once.
pub fn content_tokens<F: AsRef<[u8]>>(
    frames: &[F],
    digest: Option<[u8; 32]>,
    exact_max: u64,
) -> ContentTokens {
    let bytes: u64 = frames.iter().map(|f| f.as_ref().len() as u64).sum();
    if bytes > exact_max {
        return ContentTokens::estimated(bytes);
    }
    let count = || {
        let mut counter = StreamCounter::new(CONTENT_ENCODING);
        for frame in frames {
            counter.feed(frame.as_ref()).ok()?;
        }
        counter.finish().ok()
    };
    let exact = match digest {
        // Only exact counts enter the cache; content that is not text is estimated anew.
        Some(digest) => CONTENT_ENCODING.cached_if(digest, count),
        None => count(),
    };
    exact.map_or_else(
        || ContentTokens::estimated(bytes),
        |tokens| ContentTokens {
            tokens,
            method: CONTENT_ENCODING.exact_method(),
        },
    )
}

/// The content is not UTF-8 text: it has no exact token count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotText;

/// Counts a text that arrives in pieces cut anywhere (even inside a character).
#[derive(Debug)]
pub struct StreamCounter {
    encoding: Encoding,
    carry: Vec<u8>,
    tokens: u64,
}

impl StreamCounter {
    /// A counter with nothing counted yet.
    pub fn new(encoding: Encoding) -> Self {
        Self {
            encoding,
            carry: Vec::new(),
            tokens: 0,
        }
    }

    /// Takes the next piece; counts everything up to the last safe cut.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), NotText> {
        self.carry.extend_from_slice(bytes);
        if let Some(cut) = last_safe_cut(&self.carry) {
            let text = std::str::from_utf8(&self.carry[..cut]).map_err(|_| NotText)?;
            self.tokens += self.encoding.count(text) as u64;
            self.carry.drain(..cut);
        }
        Ok(())
    }

    /// Counts what is left and answers the total.
    pub fn finish(self) -> Result<u64, NotText> {
        let rest = std::str::from_utf8(&self.carry).map_err(|_| NotText)?;
        Ok(self.tokens + self.encoding.count(rest) as u64)
    }
}

/// The end of the last `\n` that an ASCII letter or digit follows: a place
/// where o200k_base and cl100k_base pre-tokenization always cuts.
pub fn last_safe_cut(bytes: &[u8]) -> Option<usize> {
    memchr::memrchr_iter(b'\n', bytes)
        .map(|newline| newline + 1)
        .find(|&cut| bytes.get(cut).is_some_and(u8::is_ascii_alphanumeric))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Text with the shapes that stress pre-tokenization at line starts:
    /// punctuation before newlines, slashes, indentation, CRLF, digits, unicode.
    fn sample() -> String {
        let lines = [
            "fn main() {\n    println!(\"hi\");\n}\n",
            "path/to/file.rs:12:5: error[E0308]: mismatched types\n",
            "!!\n/usr/bin/env\nfoo.\n/bar\n",
            "  indented\n\tTabbed\r\nCRLF line\r\n2024-01-01 12:00:00 INFO ok\n",
            "Ünïcödé — ✓ 日本語のテキスト 😀👍🏽\nnext line\n",
            "12345678901234567890\n99 bottles\n\n\n   \nX\n",
            "It's we'll THEY'RE\nwords\n",
        ];
        lines.iter().cycle().take(70).copied().collect()
    }

    fn in_pieces(text: &[u8], cuts: &[usize], encoding: Encoding) -> Result<u64, NotText> {
        let mut counter = StreamCounter::new(encoding);
        let mut start = 0;
        for &cut in cuts {
            counter.feed(&text[start..cut])?;
            start = cut;
        }
        counter.feed(&text[start..])?;
        counter.finish()
    }

    #[test]
    fn counting_frame_by_frame_equals_counting_the_whole() {
        let text = sample();
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let whole = encoding.tokenizer().count(text.as_str()) as u64;
            // Every 7th byte, so cuts fall inside words, after newlines and inside characters.
            let cuts: Vec<usize> = (1..text.len()).step_by(7).collect();
            assert_eq!(in_pieces(text.as_bytes(), &cuts, encoding), Ok(whole));
            // Frames of 64 bytes, as tiny-frame ingest makes them.
            let cuts: Vec<usize> = (64..text.len()).step_by(64).collect();
            assert_eq!(in_pieces(text.as_bytes(), &cuts, encoding), Ok(whole));
        }
    }

    #[test]
    fn content_tokens_are_exact_up_to_the_limit_and_estimated_beyond() {
        let text = sample();
        let frames: Vec<&[u8]> = text.as_bytes().chunks(100).collect();
        let exact = content_tokens(&frames, None, 1 << 20);
        assert_eq!(exact.method, "exact:o200k_base");
        assert_eq!(
            exact.tokens,
            Encoding::O200kBase.tokenizer().count(text.as_str()) as u64
        );
        let over = content_tokens(&frames, None, text.len() as u64 - 1);
        assert_eq!(over, ContentTokens::estimated(text.len() as u64));
        let binary = content_tokens(&[&[0xff_u8, 0xfe, b'\n', b'a'][..]], None, 1 << 20);
        assert_eq!(binary, ContentTokens::estimated(4));
    }

    #[test]
    fn a_cached_count_is_reused_for_the_same_digest() {
        let text = sample();
        let digest = [7u8; 32];
        let first = content_tokens(&[text.as_bytes()], Some(digest), 1 << 20);
        // Same digest: the count comes from the cache, not from these bytes.
        let again = content_tokens(&[&text.as_bytes()[..10]], Some(digest), 1 << 20);
        assert_eq!(first, again);
    }

    #[test]
    fn cuts_fall_after_newlines_before_letters_or_digits() {
        assert_eq!(last_safe_cut(b"ab\ncd\n/x\n"), Some(3));
        assert_eq!(last_safe_cut(b"a\n\n  b"), None);
        assert_eq!(last_safe_cut(b"x\n9"), Some(2));
        assert_eq!(last_safe_cut(b"x\n"), None);
    }

    proptest! {
        #[test]
        fn any_cuts_give_the_whole_count(
            lines in prop::collection::vec("[a-zA-Z0-9 /!.,'\\t\\r\\n😀é日-]{0,24}", 1..40),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let text = lines.join("\n");
            let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(text.len() + 1)).collect();
            cuts.sort_unstable();
            for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
                let whole = encoding.tokenizer().count(text.as_str()) as u64;
                prop_assert_eq!(in_pieces(text.as_bytes(), &cuts, encoding), Ok(whole));
            }
        }
    }
}
