//! Token counting speed: `bpe-openai` (what Cairn serves with) against
//! `tiktoken-rs` (OpenAI's tiktoken core), for o200k_base and cl100k_base,
//! on one core, over real text found on this machine; the counts must agree.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::bail;

/// Files larger than this are left out of the corpus (generated data, not prose or code).
const MAX_FILE_BYTES: u64 = 1 << 20;

/// A corpus of real text files, concatenated in a fixed order.
pub struct Corpus {
    /// The files' texts.
    pub texts: Vec<String>,
    /// Their total size in bytes.
    pub bytes: u64,
    /// Where they came from, for the report.
    pub sources: Vec<PathBuf>,
}

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
    /// `bpe-openai`.
    pub bpe: Pass,
    /// `tiktoken-rs`.
    pub tiktoken: Pass,
    /// Files whose counts differ between the two.
    pub mismatched_files: usize,
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

/// The default corpus roots: Rust sources and Markdown of the cargo registry,
/// and the text files under /usr/share/doc.
pub fn default_roots() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Some(home) = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
    {
        roots.push(home.join("registry/src"));
    }
    roots.push(PathBuf::from("/usr/share/doc"));
    roots
}

/// Reads up to `target` bytes of UTF-8 text files (`.rs`, `.md`, `.txt`, and
/// extension-less files such as READMEs and copyright notices) under `roots`,
/// in sorted path order so that the same machine always gives the same corpus.
pub fn corpus(roots: &[PathBuf], target: u64) -> anyhow::Result<Corpus> {
    let mut paths = Vec::new();
    for root in roots {
        walk(root, &mut paths);
    }
    paths.sort();
    let mut texts = Vec::new();
    let mut bytes = 0;
    for path in paths {
        if bytes >= target {
            break;
        }
        let Ok(raw) = std::fs::read(&path) else {
            continue;
        };
        let Ok(mut text) = String::from_utf8(raw) else {
            continue;
        };
        let room = usize::try_from(target - bytes).unwrap_or(usize::MAX);
        if text.len() > room {
            let mut cut = room;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        bytes += text.len() as u64;
        texts.push(text);
    }
    if bytes < target {
        bail!(
            "found only {bytes} bytes of text under {roots:?}, {target} wanted: pass --tokens-mib smaller"
        );
    }
    Ok(Corpus {
        texts,
        bytes,
        sources: roots.to_vec(),
    })
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            walk(&path, out);
        } else if kind.is_file()
            && is_text_name(&path)
            && entry.metadata().is_ok_and(|m| m.len() <= MAX_FILE_BYTES)
        {
            out.push(path);
        }
    }
}

fn is_text_name(path: &Path) -> bool {
    match path.extension().and_then(|e| e.to_str()) {
        Some(ext) => matches!(ext, "rs" | "md" | "txt"),
        None => true,
    }
}

/// Counts the corpus with both implementations and both encodings, one file at a time.
pub fn run(corpus: &Corpus) -> TokenCounting {
    let encodings: [(&'static str, &bpe_openai::Tokenizer, &tiktoken_rs::CoreBPE); 2] = [
        (
            "o200k_base",
            bpe_openai::o200k_base(),
            tiktoken_rs::o200k_base_singleton(),
        ),
        (
            "cl100k_base",
            bpe_openai::cl100k_base(),
            tiktoken_rs::cl100k_base_singleton(),
        ),
    ];
    let results = encodings
        .into_iter()
        .map(|(encoding, bpe, tiktoken)| {
            eprintln!("counting {} with bpe-openai…", encoding);
            let (bpe_pass, bpe_counts) = pass(corpus, |t| bpe.count(t));
            eprintln!("counting {} with tiktoken-rs…", encoding);
            let (tiktoken_pass, tiktoken_counts) =
                pass(corpus, |t| tiktoken.encode_ordinary(t).len());
            let mismatched_files = bpe_counts
                .iter()
                .zip(&tiktoken_counts)
                .filter(|(a, b)| a != b)
                .count();
            EncodingResult {
                encoding,
                bpe: bpe_pass,
                tiktoken: tiktoken_pass,
                mismatched_files,
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
