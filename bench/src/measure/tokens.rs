//! Token counting speed: Cairn's counter (bpe-openai's BPE behind its own
//! ASCII pre-tokenizer and piece cache), `bpe-openai` itself and
//! `tiktoken-rs` (OpenAI's tiktoken core), for o200k_base and cl100k_base,
//! on one core, over real text found on this machine; the counts must agree.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::corpus::Corpus;

/// One implementation's pass over the corpus with one encoding.
#[derive(Clone, Copy, Debug)]
pub struct Pass {
    /// Tokens counted in all.
    pub tokens: u64,
    /// Wall time of the pass.
    pub elapsed: Duration,
    /// CPU time of the counting thread during the pass (the fair figure on a
    /// shared machine), when /proc tells it.
    pub cpu: Option<Duration>,
}

/// Both implementations on one encoding.
#[derive(Clone, Debug)]
pub struct EncodingResult {
    /// `o200k_base` or `cl100k_base`.
    pub encoding: &'static str,
    /// Cairn's counter (`cairn::domain::tokens::Encoding::count`).
    pub cairn: Pass,
    /// `bpe-openai`.
    pub bpe: Pass,
    /// `tiktoken-rs`.
    pub tiktoken: Pass,
    /// Files whose counts differ between bpe-openai and tiktoken-rs.
    pub mismatched_files: usize,
    /// Files whose counts differ between Cairn's counter and tiktoken-rs.
    pub cairn_mismatched_files: usize,
}

/// The whole measure.
pub struct TokenCounting {
    /// Files and bytes counted.
    pub files: usize,
    /// Corpus size.
    pub bytes: u64,
    /// Where the corpus came from.
    pub sources: Vec<PathBuf>,
    /// One result per encoding.
    pub results: Vec<EncodingResult>,
}

/// Counts the corpus with both implementations and both encodings, one file at a time.
pub fn run(corpus: &Corpus) -> TokenCounting {
    use cairn::domain::tokens::Encoding;
    let encodings: [(
        &'static str,
        Encoding,
        &bpe_openai::Tokenizer,
        &tiktoken_rs::CoreBPE,
    ); 2] = [
        (
            "o200k_base",
            Encoding::O200kBase,
            bpe_openai::o200k_base(),
            tiktoken_rs::o200k_base_singleton(),
        ),
        (
            "cl100k_base",
            Encoding::Cl100kBase,
            bpe_openai::cl100k_base(),
            tiktoken_rs::cl100k_base_singleton(),
        ),
    ];
    let results = encodings
        .into_iter()
        .map(|(encoding, cairn, bpe, tiktoken)| {
            eprintln!("counting {} with Cairn's counter…", encoding);
            let (cairn_pass, cairn_counts) = pass(corpus, |t| cairn.count(t));
            eprintln!("counting {} with bpe-openai…", encoding);
            let (bpe_pass, bpe_counts) = pass(corpus, |t| bpe.count(t));
            eprintln!("counting {} with tiktoken-rs…", encoding);
            let (tiktoken_pass, tiktoken_counts) =
                pass(corpus, |t| tiktoken.encode_ordinary(t).len());
            let differ = |counts: &[usize]| {
                counts
                    .iter()
                    .zip(&tiktoken_counts)
                    .filter(|(a, b)| a != b)
                    .count()
            };
            EncodingResult {
                encoding,
                cairn: cairn_pass,
                mismatched_files: differ(&bpe_counts),
                cairn_mismatched_files: differ(&cairn_counts),
                bpe: bpe_pass,
                tiktoken: tiktoken_pass,
            }
        })
        .collect();
    TokenCounting {
        files: corpus.texts.len(),
        bytes: corpus.bytes,
        sources: corpus.sources.clone(),
        results,
    }
}

fn pass(corpus: &Corpus, count: impl Fn(&str) -> usize) -> (Pass, Vec<usize>) {
    let cpu_before = crate::procfs::cpu_time("thread-self").ok();
    let start = Instant::now();
    let counts: Vec<usize> = corpus.texts.iter().map(|t| count(t)).collect();
    let elapsed = start.elapsed();
    let cpu = crate::procfs::cpu_time("thread-self")
        .ok()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    let tokens = counts.iter().map(|&n| n as u64).sum();
    (
        Pass {
            tokens,
            elapsed,
            cpu,
        },
        counts,
    )
}
