//! Deterministic, realistic text: log lines, code, JSON records, test and
//! stack-trace lines, drawn from a seeded PRNG so it never repeats in blocks
//! and compresses about like real tool output (≈ 4–8× with `zstd -3`).

use std::convert::Infallible;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;
use bytes::Bytes;
use futures::Stream;

use vocabulary::{VOCABULARY, Vocabulary};

mod lines;
pub mod transcript;
mod vocabulary;

/// Stock phrases per generator.
const PHRASES: usize = 64;

/// A small, fast PRNG (wyrand): deterministic for a seed, plenty random for text.
pub struct Rng(u64);

impl Rng {
    /// A generator whose sequence is a function of `seed` alone.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = u128::from(self.0) * u128::from(self.0 ^ 0xe703_7ed1_a0b4_28db);
        // Both halves of the 128-bit product, folded: the wyrand output.
        ((t >> 64) as u64) ^ (t as u64)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }

    /// Favours the front of the list (as real vocabularies favour a few words).
    fn skewed<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.skewed_index(items.len())]
    }

    fn skewed_index(&mut self, len: usize) -> usize {
        let n = len as u64;
        self.below(n).min(self.below(n)) as usize
    }
}

/// Generates lines of realistic text, one after the other.
pub struct TextGenerator {
    rng: Rng,
    vocab: &'static Vocabulary,
    /// Stock messages, drawn once: real programs log a limited set of phrases.
    phrases: Vec<Vec<u8>>,
    /// Milliseconds since `START_DAY` 00:00 UTC; advances a little every line.
    clock_ms: u64,
}

impl TextGenerator {
    /// A generator whose output is a function of `seed` alone.
    pub fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0x5eed_ca1e_b00c_0001);
        let clock_ms = rng.below(6 * 3_600_000);
        let mut generator = Self {
            rng,
            vocab: &VOCABULARY,
            phrases: Vec::new(),
            clock_ms,
        };
        generator.phrases = (0..PHRASES)
            .map(|_| {
                let mut phrase = Vec::new();
                generator.random_words(&mut phrase, 3, 9);
                phrase
            })
            .collect();
        generator
    }

    /// Appends whole lines to `out` until it holds at least `len` bytes; returns the lines added.
    pub fn fill(&mut self, out: &mut Vec<u8>, len: usize) -> u64 {
        let mut lines = 0;
        while out.len() < len {
            self.push_line(out);
            lines += 1;
        }
        lines
    }

    /// Appends one line, ending with `\n` (and containing no other).
    pub fn push_line(&mut self, out: &mut Vec<u8>) {
        self.clock_ms += self.rng.below(40);
        match self.rng.below(100) {
            0..55 => self.log_line(out),
            55..75 => self.code_line(out),
            75..87 => self.json_line(out),
            _ => self.misc_line(out),
        }
        out.push(b'\n');
    }
}

/// Bytes and lines produced so far by a [`text_stream`].
#[derive(Default, Debug)]
pub struct Tally {
    bytes: AtomicU64,
    lines: AtomicU64,
}

impl Tally {
    /// Bytes produced.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Lines produced (every line ends with `\n`).
    pub fn lines(&self) -> u64 {
        self.lines.load(Ordering::Relaxed)
    }
}

/// Whole lines of generated text, at least `total` bytes (less than one line
/// more), produced chunk by chunk as the stream is polled: never held whole.
pub fn text_stream(
    seed: u64,
    total: u64,
    chunk_bytes: usize,
) -> (
    impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
    Arc<Tally>,
) {
    let tally = Arc::new(Tally::default());
    let state = (TextGenerator::new(seed), tally.clone());
    let stream = futures::stream::unfold(state, move |(mut generator, tally)| async move {
        let produced = tally.bytes();
        if produced >= total {
            return None;
        }
        let want = usize::try_from(total - produced)
            .unwrap_or(usize::MAX)
            .min(chunk_bytes);
        let mut chunk = Vec::with_capacity(want + 512);
        let lines = generator.fill(&mut chunk, want);
        tally.lines.fetch_add(lines, Ordering::Relaxed);
        tally.bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        Some((Ok(Bytes::from(chunk)), (generator, tally)))
    });
    (stream, tally)
}

/// Writes at least `total` bytes of generated text (whole lines) to `path`;
/// returns the bytes and lines written.
pub fn write_file(path: &Path, seed: u64, total: u64) -> anyhow::Result<(u64, u64)> {
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut writer = BufWriter::with_capacity(1 << 20, file);
    let mut generator = TextGenerator::new(seed);
    let mut chunk = Vec::with_capacity((1 << 20) + 512);
    let (mut bytes, mut lines) = (0u64, 0u64);
    while bytes < total {
        chunk.clear();
        let want = usize::try_from(total - bytes)
            .unwrap_or(usize::MAX)
            .min(1 << 20);
        lines += generator.fill(&mut chunk, want);
        bytes += chunk.len() as u64;
        writer
            .write_all(&chunk)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    writer
        .flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok((bytes, lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_gives_same_text_and_lines_end_with_newline() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let lines = TextGenerator::new(7).fill(&mut a, 100_000);
        TextGenerator::new(7).fill(&mut b, 100_000);
        assert_eq!(a, b);
        assert_eq!(a.last(), Some(&b'\n'));
        assert_eq!(lines, a.iter().filter(|&&c| c == b'\n').count() as u64);
        assert!(std::str::from_utf8(&a).is_ok());
    }
}
