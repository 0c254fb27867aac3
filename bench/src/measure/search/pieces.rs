//! The memories the search measure stores: pieces of this machine's text files.

use std::collections::HashSet;
use std::path::PathBuf;

use anyhow::bail;
use sha2::{Digest, Sha256};

use super::{MAX_PIECE, MIN_PIECE, Pieces};
use crate::corpus;

/// Cuts the text files under `roots` into pieces of [`MIN_PIECE`]–[`MAX_PIECE`]
/// bytes at line ends, drops repeated pieces, and keeps `count` of them spread
/// evenly over all (so that every part of the corpus is represented).
pub fn pieces(roots: &[PathBuf], count: usize) -> anyhow::Result<Pieces> {
    let mut seen = HashSet::new();
    let mut all: Vec<(usize, String)> = Vec::new();
    let mut files = 0;
    for (_, text) in corpus::search_texts(roots) {
        let before = all.len();
        for piece in cut(&text) {
            if seen.insert(Sha256::digest(piece.as_bytes())) {
                all.push((files, piece.to_owned()));
            }
        }
        if all.len() > before {
            files += 1;
        }
    }
    let available = all.len();
    if available < count {
        bail!(
            "found only {available} distinct pieces of text under {roots:?}, {count} wanted: \
             pass --search-memories smaller"
        );
    }
    let mut texts = Vec::with_capacity(count);
    let mut used_files = HashSet::new();
    for i in 0..count {
        let (file, text) = std::mem::take(&mut all[i * available / count]);
        used_files.insert(file);
        texts.push(text);
    }
    Ok(Pieces {
        texts,
        files: used_files.len(),
        sources: roots.to_vec(),
        available,
    })
}

/// A text cut into near-equal pieces of at most [`MAX_PIECE`] bytes, each
/// ending at a line end where there is one; pieces under [`MIN_PIECE`] are left out.
pub(super) fn cut(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let rest = text.len() - start;
        let end = if rest <= MAX_PIECE {
            text.len()
        } else {
            // Pieces still to cut, were they all full: share the rest evenly.
            let mut ideal = start + rest.div_ceil(rest.div_ceil(MAX_PIECE));
            while !text.is_char_boundary(ideal) {
                ideal -= 1;
            }
            text[start..ideal]
                .rfind('\n')
                .map_or(ideal, |newline| start + newline + 1)
        };
        let piece = &text[start..end];
        if piece.len() >= MIN_PIECE {
            out.push(piece);
        }
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_end_at_lines_and_keep_all_the_text() {
        let line = "word ".repeat(19) + "\n";
        let text = line.repeat(50 * 1024 / line.len());
        let pieces = cut(&text);
        assert_eq!(pieces.len(), text.len().div_ceil(MAX_PIECE));
        assert_eq!(pieces.concat(), text);
        for piece in &pieces {
            assert!(piece.ends_with('\n'));
            assert!(
                (MIN_PIECE..=MAX_PIECE).contains(&piece.len()),
                "{}",
                piece.len()
            );
        }
        assert!(cut(&"short\n".repeat(10)).is_empty());
        // No line end to cut at, and characters of several bytes: cuts fall between characters.
        let wide = "é𝒜".repeat(10_000);
        let pieces = cut(&wide);
        assert_eq!(pieces.concat(), wide);
        assert!(pieces.len() >= 2);
        assert!(pieces.iter().all(|p| p.len() <= MAX_PIECE));
    }
}
