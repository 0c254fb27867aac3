//! Real text found on this machine: the `.rs`, `.md`, `.txt` and
//! extension-less files of the cargo registry and /usr/share/doc, read in
//! sorted path order so that the same machine always gives the same text.
//! The token-counting and search measures both draw from it.

use std::path::{Path, PathBuf};

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

/// Every UTF-8 text file (`.rs`, `.md`, `.txt`, and extension-less files such
/// as READMEs and copyright notices, at most 1 MiB) under `roots`, with its
/// path, in sorted path order; files that cannot be read or are not UTF-8 are
/// left out. Files are read one at a time, as the iterator is consumed.
pub fn texts(roots: &[PathBuf]) -> impl Iterator<Item = (PathBuf, String)> {
    texts_named(roots, is_text_name)
}

/// Like [`texts`], with also the web pages and the C, Python and JavaScript
/// sources (`.html`, `.c`, `.h`, `.py`, `.js`): the search measure needs
/// about a gigabyte of distinct text, more than prose and Rust give.
pub fn search_texts(roots: &[PathBuf]) -> impl Iterator<Item = (PathBuf, String)> {
    texts_named(roots, |path| {
        is_text_name(path)
            || path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|ext| SEARCH_EXTENSIONS.contains(&ext))
    })
}

/// The extensions [`search_texts`] takes beyond those of [`texts`].
pub const SEARCH_EXTENSIONS: [&str; 5] = ["html", "c", "h", "py", "js"];

fn texts_named(
    roots: &[PathBuf],
    accept: fn(&Path) -> bool,
) -> impl Iterator<Item = (PathBuf, String)> {
    let mut paths = Vec::new();
    for root in roots {
        walk(root, accept, &mut paths);
    }
    paths.sort();
    paths.into_iter().filter_map(|path| {
        let raw = std::fs::read(&path).ok()?;
        let text = String::from_utf8(raw).ok()?;
        Some((path, text))
    })
}

/// Reads the first `target` bytes of [`texts`] under `roots` (the last file cut short).
pub fn read(roots: &[PathBuf], target: u64) -> anyhow::Result<Corpus> {
    let mut texts = Vec::new();
    let mut bytes = 0;
    for (_, mut text) in self::texts(roots) {
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
        if bytes >= target {
            break;
        }
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

fn walk(dir: &Path, accept: fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            walk(&path, accept, out);
        } else if kind.is_file()
            && accept(&path)
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
