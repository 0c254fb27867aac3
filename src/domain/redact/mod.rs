//! Secret redaction: private keys, cloud and API tokens, JWTs, passwords in
//! URLs and `password=`-style assignments are replaced by
//! `[REDACTED:<kind>]` before content is stored or summarized.
//!
//! [`Redactor`] works on bytes pushed in any pieces (invalid UTF-8 passes
//! through untouched) with bounded memory; uploads are redacted frame by
//! frame as they are ingested (see [`crate::domain::memories::ingest`]);
//! [`redact_text`] redacts text held in memory.

mod alternatives;
mod kinds;
mod patterns;
mod redactor;

use std::collections::BTreeMap;

pub use kinds::Kind;
pub use redactor::{Limits, Redactor};

/// What a redaction replaced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Secrets replaced.
    pub total: u64,
    /// Secrets replaced, by kind.
    pub kinds: BTreeMap<Kind, u64>,
}

impl Report {
    /// Counts one secret of `kind`.
    pub fn add(&mut self, kind: Kind) {
        self.total += 1;
        *self.kinds.entry(kind).or_default() += 1;
    }

    /// Adds the counts of `other`.
    pub fn merge(&mut self, other: &Report) {
        self.total += other.total;
        for (kind, count) in &other.kinds {
            *self.kinds.entry(*kind).or_default() += count;
        }
    }

    /// The count of one kind.
    pub fn count(&self, kind: Kind) -> u64 {
        self.kinds.get(&kind).copied().unwrap_or(0)
    }
}

/// Redacts text held in memory.
pub fn redact_text(text: &str) -> (String, Report) {
    let (bytes, report) = redact_bytes(text.as_bytes());
    // Markers are ASCII and replace whole UTF-8 sequences; a lossy conversion
    // could only change bytes of invalid input, which a &str cannot hold.
    (String::from_utf8_lossy(&bytes).into_owned(), report)
}

/// Redacts bytes held in memory.
pub fn redact_bytes(content: &[u8]) -> (Vec<u8>, Report) {
    let mut redactor = Redactor::default();
    let mut out = Vec::with_capacity(content.len());
    redactor.push(content, &mut out);
    redactor.finish(&mut out);
    (out, redactor.report().clone())
}

/// Whether content of this media type is scanned: everything but clearly
/// binary types (images, audio, video, archives, compressed data, PDF,
/// `application/octet-stream`), where a match would only corrupt the bytes.
pub fn scans_media_type(mime: &str) -> bool {
    let mime = mime
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    const BINARY_PREFIXES: &[&str] = &["image/", "audio/", "video/", "font/"];
    const BINARY: &[&str] = &[
        "application/octet-stream",
        "application/zip",
        "application/gzip",
        "application/x-gzip",
        "application/zstd",
        "application/x-bzip2",
        "application/x-xz",
        "application/x-7z-compressed",
        "application/x-rar-compressed",
        "application/x-tar",
        "application/java-archive",
        "application/pdf",
        "application/wasm",
        "application/x-sqlite3",
        "application/vnd.sqlite3",
    ];
    !(BINARY_PREFIXES.iter().any(|p| mime.starts_with(p)) || BINARY.contains(&mime.as_str()))
}

#[cfg(test)]
mod frame_tests;
#[cfg(test)]
mod tests;
