//! The exact token count of an upload, counted while it arrives.
//!
//! Counting a megabyte of text is several milliseconds of BPE on one core,
//! the largest part of a put. So instead of one pass over the whole content
//! after its last frame, each frame is cut where pre-tokenization cuts
//! anyway ([`last_safe_cut`]) and counted on the blocking pool as soon as
//! the assembler takes it, in pieces that run on every core, while later
//! frames are still being read, compressed and hashed. The sum is the count
//! of one pass (see [`crate::domain::tokens::stream`]). A content of one
//! frame is counted by the frame worker that compresses it
//! ([`Counting::add_counted`]): no hand-off of its own.
//!
//! A put that may answer before its count ([`super::CountLater`]) keeps its
//! frames instead, so that none of its CPU goes to counting before the
//! answer; they are then counted after it, or now if there is no room.

use std::ops::Range;

use bytes::Bytes;
use tokio::task::JoinHandle;

use crate::domain::DomainError;
use crate::domain::tokens::stream::{CONTENT_ENCODING, ContentTokens, last_safe_cut};

use super::utf8::Utf8Check;

/// Smallest piece counted on its own: smaller ones are not worth a hand-off
/// (and content under two pieces is counted once, at the end).
const PIECE_BYTES: usize = 128 << 10;
/// Content under this size is counted in one pass, on one core (larger:
/// in pieces, on every core).
pub(super) const ONE_PASS_MAX: usize = 2 * PIECE_BYTES;

/// Counts under way for one upload.
pub(super) struct Counting {
    /// Content up to this size is counted exactly.
    max: u64,
    /// Content bytes taken so far.
    bytes: u64,
    /// Counts of the pieces handed off (`None` in a piece that is not
    /// UTF-8); `None` once the content is over `max`.
    parts: Option<Vec<JoinHandle<Option<u64>>>>,
    /// Counts made already by the frame workers, summed (`None` once one
    /// was not UTF-8).
    done: Option<u64>,
    /// Bytes after the last safe cut, waiting for the next frame.
    carry: Vec<u8>,
    /// The frames kept for a count after the answer (`None`: counted as
    /// they come).
    kept: Option<Vec<Bytes>>,
    /// Whether the kept frames are UTF-8 (checked as they come, so that a
    /// put whose count will not be exact does not say it is settling).
    utf8: Utf8Check,
    /// The kept frame (a lone one) is counted in `done` already.
    kept_counted: bool,
}

impl Counting {
    /// Nothing counted yet; content over `max` bytes gets the estimate.
    /// With `keep`, frames are kept rather than counted as they come.
    pub(super) fn new(max: u64, keep: bool) -> Self {
        Self {
            max,
            bytes: 0,
            parts: Some(Vec::new()),
            done: Some(0),
            carry: Vec::new(),
            kept: keep.then(Vec::new),
            utf8: Utf8Check::default(),
            kept_counted: false,
        }
    }

    /// Takes the next frame of content and starts counting what can be.
    pub(super) fn add(&mut self, frame: &Bytes) {
        self.bytes += frame.len() as u64;
        if self.bytes > self.max {
            self.parts = None;
            self.carry = Vec::new();
            self.kept = None;
        }
        if let Some(kept) = &mut self.kept {
            kept.push(frame.clone());
            self.utf8.feed(frame);
            return;
        }
        self.start(frame);
    }

    /// Takes the next frame of content with its count, made already (by the
    /// frame worker of a lone frame; `None`: it is not UTF-8). A kept frame
    /// is kept too, for a count after the answer should the put make one.
    pub(super) fn add_counted(&mut self, frame: &Bytes, counted: Option<u64>) {
        // Only a frame with nothing before it is counted alone.
        if self.bytes > 0 || !self.carry.is_empty() {
            return self.add(frame);
        }
        self.bytes = frame.len() as u64;
        if self.bytes > self.max {
            self.parts = None;
            self.kept = None;
            return;
        }
        self.done = counted;
        if let Some(kept) = &mut self.kept {
            kept.push(frame.clone());
            self.utf8.feed(frame);
            self.kept_counted = true;
        }
    }

    /// Counts what can be of `frame` on the blocking pool.
    fn start(&mut self, frame: &Bytes) {
        let Some(parts) = &mut self.parts else {
            return;
        };
        // The carry grows by appending (no copy of what it holds), so a long
        // stretch without a safe cut, or many small frames, stays linear.
        let text = if self.carry.is_empty() && frame.len() >= 2 * PIECE_BYTES {
            frame.clone()
        } else {
            self.carry.extend_from_slice(frame);
            // Small contents wait for the end: one count, as before the pieces.
            if self.carry.len() < 2 * PIECE_BYTES {
                return;
            }
            Bytes::from(std::mem::take(&mut self.carry))
        };
        let Some(cut) = last_safe_cut(&text) else {
            // Back to the carry; a Bytes made from the carry gives its buffer back.
            self.carry = Vec::from(text);
            return;
        };
        for piece in pieces(&text[..cut]) {
            parts.push(count_off_executor(text.slice(piece)));
        }
        self.carry = text[cut..].to_vec();
    }

    /// The frames kept for a count after the answer, if they were kept and
    /// the count will come out exact: UTF-8 within the limit.
    pub(super) fn kept(&self) -> Option<&[Bytes]> {
        self.kept
            .as_deref()
            .filter(|_| self.parts.is_some() && self.utf8.is_text())
    }

    /// Content up to this size is counted exactly.
    pub(super) fn max(&self) -> u64 {
        self.max
    }

    /// The count: exact when the content is UTF-8 within the limit, else
    /// the estimate. The exact count joins the shared cache under `digest`.
    pub(super) async fn finish(mut self, digest: [u8; 32]) -> Result<ContentTokens, DomainError> {
        if let Some(kept) = self.kept.take() {
            if !self.utf8.is_text() {
                return Ok(ContentTokens::estimated(self.bytes));
            }
            if !self.kept_counted {
                for frame in &kept {
                    self.start(frame);
                }
            }
        }
        let Some(parts) = self.parts else {
            return Ok(ContentTokens::estimated(self.bytes));
        };
        let rest = (!self.carry.is_empty()).then(|| count_off_executor(Bytes::from(self.carry)));
        let mut total = self.done;
        for part in parts.into_iter().chain(rest) {
            let counted = part.await.map_err(DomainError::internal)?;
            total = total.zip(counted).map(|(a, b)| a + b);
        }
        Ok(match total {
            Some(tokens) => ContentTokens {
                tokens: CONTENT_ENCODING
                    .cached_if(digest, || Some(tokens))
                    .unwrap_or(tokens),
                method: CONTENT_ENCODING.exact_method(),
            },
            None => ContentTokens::estimated(self.bytes),
        })
    }
}

/// The exact token count of `content`; `None` when it is not UTF-8.
pub(super) fn count(content: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(content).ok()?;
    Some(CONTENT_ENCODING.count(text) as u64)
}

/// [`count`] on the blocking pool.
fn count_off_executor(text: Bytes) -> JoinHandle<Option<u64>> {
    tokio::task::spawn_blocking(move || count(&text))
}

/// `text` (which ends at a safe cut or at the content's end) in pieces of at
/// least [`PIECE_BYTES`], each ending at a safe cut.
fn pieces(text: &[u8]) -> Vec<Range<usize>> {
    let mut pieces = Vec::new();
    let mut start = 0;
    while text.len() - start >= 2 * PIECE_BYTES {
        let from = start + PIECE_BYTES;
        let cut = memchr::memchr_iter(b'\n', &text[from..])
            .map(|newline| from + newline + 1)
            .find(|&cut| text.get(cut).is_some_and(u8::is_ascii_alphanumeric));
        let Some(cut) = cut else { break };
        pieces.push(start..cut);
        start = cut;
    }
    if start < text.len() {
        pieces.push(start..text.len());
    }
    pieces
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use sha2::Digest;

    use super::*;

    /// Lines of code-like text with the shapes that stress cuts: indentation,
    /// punctuation before newlines, slashes, digits, unicode.
    fn text(lines: usize, seed: u64) -> String {
        let shapes = [
            "fn main() {",
            "    let x = 42;",
            "}",
            "// comment/path",
            "0x1f 123456",
            "Ünïcödé wörds 名前",
            "a/b/c;",
            "",
            "\tTab\tand trailing  ",
        ];
        (0..lines)
            .map(|i| shapes[(i as u64 * 7 + seed) as usize % shapes.len()])
            .collect::<Vec<_>>()
            .join("\n")
    }

    async fn counted(content: &[u8], frame: usize, max: u64) -> ContentTokens {
        let mut counting = Counting::new(max, frame % 2 == 1);
        for chunk in content.chunks(frame.max(1)) {
            counting.add(&Bytes::copy_from_slice(chunk));
        }
        // The content's digest keys the shared count cache, as at put.
        let digest: [u8; 32] = sha2::Sha256::digest(content).into();
        counting.finish(digest).await.unwrap()
    }

    #[tokio::test]
    async fn a_megabyte_counted_in_pieces_is_the_count_of_one_pass() {
        let content = text(100_000, 3);
        assert!(content.len() > 1 << 20);
        let one_pass = CONTENT_ENCODING.count(&content) as u64;
        for frame in [4096, 100_000, 512 << 10, 4 << 20] {
            let got = counted(content.as_bytes(), frame, 8 << 20).await;
            assert_eq!(got.tokens, one_pass, "frames of {frame}");
            assert_eq!(got.method, CONTENT_ENCODING.exact_method());
        }
    }

    #[tokio::test]
    async fn a_lone_frame_counted_by_its_worker_is_taken_as_counted() {
        // Each case its own content: the shared cache keys counts by digest.
        let case = |seed: u64| {
            let content = text(2_000 + seed as usize, seed);
            let digest: [u8; 32] = sha2::Sha256::digest(content.as_bytes()).into();
            (Bytes::from(content), digest)
        };
        // The worker's figure is taken, not counted again (7 is no real count),
        // also when the frame is kept for a count after the answer.
        for keep in [false, true] {
            let (bytes, digest) = case(u64::from(keep));
            let mut counting = Counting::new(1 << 20, keep);
            counting.add_counted(&bytes, Some(7));
            assert_eq!(counting.kept().is_some(), keep);
            let got = counting.finish(digest).await.unwrap();
            assert_eq!(got.tokens, 7, "keep: {keep}");
            assert_eq!(got.method, CONTENT_ENCODING.exact_method());
        }
        // Not UTF-8, or over the limit: the estimate.
        let (bytes, digest) = case(2);
        let estimate = ContentTokens::estimated(bytes.len() as u64);
        let mut counting = Counting::new(1 << 20, false);
        counting.add_counted(&bytes, None);
        assert_eq!(counting.finish(digest).await.unwrap(), estimate);
        let mut counting = Counting::new(100, true);
        counting.add_counted(&bytes, Some(7));
        assert!(counting.kept().is_none());
        assert_eq!(counting.finish(digest).await.unwrap(), estimate);
        // A frame after others is counted here, whatever it brings.
        let (bytes, digest) = case(3);
        let one_pass = CONTENT_ENCODING.count(std::str::from_utf8(&bytes).unwrap()) as u64;
        let mut counting = Counting::new(1 << 20, false);
        counting.add(&bytes.slice(..100));
        counting.add_counted(&bytes.slice(100..), Some(7));
        assert_eq!(counting.finish(digest).await.unwrap().tokens, one_pass);
    }

    #[tokio::test]
    async fn over_the_limit_or_not_utf8_is_the_estimate() {
        let content = text(2_000, 1);
        let over = counted(content.as_bytes(), 1000, 1000).await;
        assert_eq!(over, ContentTokens::estimated(content.len() as u64));
        let mut binary = content.into_bytes();
        binary[5000] = 0xff;
        let not_text = counted(&binary, 700, 1 << 20).await;
        assert_eq!(not_text, ContentTokens::estimated(binary.len() as u64));
    }

    #[tokio::test]
    async fn tiny_frames_of_one_long_line_count_like_one_pass() {
        // No safe cut anywhere: everything waits in the carry, appended to.
        let line = "{\"k\": [1, 2, 3], \"name\": \"x/y\"}, ".repeat(20_000);
        assert!(line.len() > 600 << 10);
        let got = counted(line.as_bytes(), 64, 8 << 20).await;
        assert_eq!(got.tokens, CONTENT_ENCODING.count(&line) as u64);
    }

    #[test]
    fn pieces_end_at_safe_cuts_and_cover_the_text() {
        let content = text(40_000, 5);
        let bytes = content.as_bytes();
        let pieces = pieces(bytes);
        assert!(pieces.len() > 2, "{}", pieces.len());
        assert_eq!(pieces.first().unwrap().start, 0);
        assert_eq!(pieces.last().unwrap().end, bytes.len());
        for pair in pieces.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
            assert_eq!(bytes[pair[0].end - 1], b'\n');
            assert!(bytes[pair[0].end].is_ascii_alphanumeric());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn any_framing_counts_like_one_pass(lines in 1usize..3000, seed in 0u64..9, frame in 1usize..70_000) {
            let content = text(lines, seed);
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let got = runtime.block_on(counted(content.as_bytes(), frame, 1 << 30));
            prop_assert_eq!(got.tokens, CONTENT_ENCODING.count(&content) as u64);
        }
    }
}
