//! The words every line matching a grep pattern must hold, as the full-text
//! index spells them: a grep asks the index which frames lack one of them
//! and reads only the others.
//!
//! A word counts only when the pattern pins both its ends: it lies inside
//! a literal run of the pattern with a character that is not a letter or a
//! digit (or a line's edge, `^`/`$`) on each side. Then any matching line
//! holds exactly that word, split the way [`crate::text::words`] splits,
//! whatever else the line holds. `ERROR.*retrying request` pins none (each
//! literal could go on into a longer word); `ZANZIBAR quux planted marker`
//! pins `quux` and `planted`.

use std::collections::HashSet;

use regex_syntax::ParserBuilder;
use regex_syntax::hir::{Class, Hir, HirKind, Look};

use crate::text;

/// Most words asked of the index (more only narrow it further).
const MAX_WORDS: usize = 8;
/// Most words looked at to choose them from (a pattern may hold millions).
const MAX_CANDIDATES: usize = 64;
/// Longest word the index holds, in bytes (its tokenizer skips longer ones).
const MAX_WORD_BYTES: usize = 255;
/// Most characters of a class looked at to tell it holds no letter or digit.
const MAX_CLASS_CHARS: u32 = 512;

/// The folded words every line matching the pattern holds (empty when none
/// can be told, or the pattern does not parse).
pub fn required_words(pattern: &str, fixed: bool, ignore_case: bool) -> Vec<String> {
    let mut pieces = Vec::new();
    if fixed {
        pieces.extend([Piece::Open, Piece::Text(pattern.to_owned()), Piece::Open]);
    } else {
        // Case is read as written: `(?i)` parts become classes and pin
        // nothing; with `ignore_case` only case-proof words are kept below.
        let Ok(hir) = ParserBuilder::new()
            .multi_line(true)
            .utf8(false)
            .build()
            .parse(pattern)
        else {
            return Vec::new();
        };
        pieces.push(Piece::Open);
        flatten(&hir, &mut pieces);
        pieces.push(Piece::Open);
    }
    let mut words: HashSet<String> = HashSet::new();
    'runs: for (run, pinned_left, pinned_right) in runs(&pieces) {
        for (word, start, end) in alphanumeric_words(&run) {
            let whole = (start > 0 || pinned_left) && (end < run.len() || pinned_right);
            if whole && word.len() <= MAX_WORD_BYTES && (!ignore_case || case_proof(word)) {
                words.insert(text::fold(word));
                if words.len() >= MAX_CANDIDATES {
                    break 'runs;
                }
            }
        }
    }
    // The longest words first: the rarest, most often.
    let mut words: Vec<String> = words.into_iter().collect();
    words.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    words.truncate(MAX_WORDS);
    words
}

/// What a pattern matches, piece by piece, as far as pinning words goes.
#[derive(Debug)]
enum Piece {
    /// Literal text.
    Text(String),
    /// Something that is never a letter or digit: a class of such
    /// characters, or a line's edge.
    Break,
    /// Anything else (a word may go on through it).
    Open,
}

/// The pieces of `hir` in order, appended to `out`.
fn flatten(hir: &Hir, out: &mut Vec<Piece>) {
    match hir.kind() {
        HirKind::Empty => {}
        HirKind::Literal(literal) => match std::str::from_utf8(&literal.0) {
            Ok(text) => out.push(Piece::Text(text.to_owned())),
            Err(_) => out.push(Piece::Open),
        },
        HirKind::Class(class) => out.push(if never_alphanumeric(class) {
            Piece::Break
        } else {
            Piece::Open
        }),
        HirKind::Look(look) => match look {
            // Lines are matched one by one: these stand at a line's edge.
            Look::Start
            | Look::End
            | Look::StartLF
            | Look::EndLF
            | Look::StartCRLF
            | Look::EndCRLF => out.push(Piece::Break),
            // Word boundaries take `_` for a word character: they pin nothing,
            // and consume nothing either.
            _ => {}
        },
        HirKind::Capture(capture) => flatten(&capture.sub, out),
        HirKind::Concat(parts) => {
            for part in parts {
                flatten(part, out);
            }
        }
        HirKind::Repetition(repetition) => {
            if repetition.min == 1 && repetition.max == Some(1) {
                flatten(&repetition.sub, out);
            } else if repetition.min >= 1 {
                // Present once at least, but what stands next to one copy may
                // be another copy: its pieces count, its edges stay open —
                // unless it never holds a letter or digit at all.
                let mut inner = Vec::new();
                flatten(&repetition.sub, &mut inner);
                if inner.iter().all(|p| matches!(p, Piece::Break)) && !inner.is_empty() {
                    out.push(Piece::Break);
                } else {
                    out.push(Piece::Open);
                    out.extend(inner);
                    out.push(Piece::Open);
                }
            } else {
                out.push(Piece::Open);
            }
        }
        HirKind::Alternation(_) => out.push(Piece::Open),
    }
}

/// Whether `class` matches only characters (or bytes) that are neither
/// letters nor digits, and no byte that may belong to one.
fn never_alphanumeric(class: &Class) -> bool {
    match class {
        Class::Unicode(class) => {
            let mut seen = 0u32;
            for range in class.ranges() {
                let (start, end) = (u32::from(range.start()), u32::from(range.end()));
                seen = seen.saturating_add(end - start + 1);
                if seen > MAX_CLASS_CHARS {
                    return false;
                }
                if (start..=end)
                    .filter_map(char::from_u32)
                    .any(char::is_alphanumeric)
                {
                    return false;
                }
            }
            true
        }
        Class::Bytes(class) => class
            .ranges()
            .iter()
            .all(|r| (r.start()..=r.end()).all(|b| b.is_ascii() && !b.is_ascii_alphanumeric())),
    }
}

/// The literal runs of `pieces`: their text and whether each end is pinned
/// (a break stands there).
fn runs(pieces: &[Piece]) -> Vec<(String, bool, bool)> {
    let mut out = Vec::new();
    let mut run = String::new();
    let mut left = false;
    let mut before = &Piece::Open;
    for piece in pieces {
        match piece {
            Piece::Text(text) => {
                if run.is_empty() {
                    left = matches!(before, Piece::Break);
                }
                run.push_str(text);
            }
            other => {
                if !run.is_empty() {
                    out.push((
                        std::mem::take(&mut run),
                        left,
                        matches!(other, Piece::Break),
                    ));
                }
                before = other;
            }
        }
    }
    if !run.is_empty() {
        out.push((run, left, false));
    }
    out
}

/// The runs of letters and digits of `text`, with their byte ranges.
fn alphanumeric_words(text: &str) -> impl Iterator<Item = (&str, usize, usize)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let rest = &text[at..];
        let start = at + rest.find(char::is_alphanumeric)?;
        let end = text[start..]
            .find(|c: char| !c.is_alphanumeric())
            .map_or(text.len(), |e| start + e);
        at = end;
        Some((&text[start..end], start, end))
    })
}

/// A word that matches case-insensitively only words folding to its own
/// fold: ASCII without `k` and `s` (which also match the Kelvin sign and
/// the long s, whose folds differ).
fn case_proof(word: &str) -> bool {
    word.bytes()
        .all(|b| b.is_ascii() && !matches!(b.to_ascii_lowercase(), b'k' | b's'))
}

#[cfg(test)]
mod tests {
    use super::required_words;

    fn words(pattern: &str) -> Vec<String> {
        let mut words = required_words(pattern, false, false);
        words.sort();
        words
    }

    #[test]
    fn fixed_text_pins_its_inner_words() {
        let mut found = required_words("ZANZIBAR quux planted marker", true, false);
        found.sort();
        assert_eq!(found, ["planted", "quux"]);
        assert!(required_words("quux", true, false).is_empty());
        // Regex syntax means nothing to a fixed pattern.
        assert_eq!(required_words("a.b (cd) e", true, false), ["cd", "b"]);
        // A pattern of many words: a few of the first, longest first.
        let many: String = (0..100_000).map(|i| format!("w{i} ")).collect();
        let found = required_words(&format!("x {many}"), true, false);
        assert_eq!(found.len(), 8);
        assert!(found.iter().all(|w| w.len() == 3), "{found:?}");
    }

    #[test]
    fn open_ends_pin_nothing() {
        assert!(words("ERROR.*retrying request").is_empty());
        assert_eq!(words("ERROR.*retrying request now"), ["request"]);
        assert!(words("foo\\w+ bar").is_empty());
        assert!(words("a(b|c) d e").contains(&"d".to_owned()));
    }

    #[test]
    fn line_edges_and_separator_classes_pin_words() {
        assert_eq!(words("^error: disk full$"), ["disk", "error", "full"]);
        assert_eq!(words("timeout\\s+after\\s+30s"), ["after"]);
        assert_eq!(words("[ :]code[=:]"), ["code"]);
        // A class holding a letter, or an optional separator, pins nothing.
        assert!(words("x[a ]code[ ]").is_empty());
        assert!(words("a\\s*code\\s*b").is_empty());
        // Word boundaries take `_` for a letter: they pin nothing.
        assert!(words("\\bcode\\b").is_empty());
    }

    #[test]
    fn repeated_parts_keep_their_words_not_their_edges() {
        assert_eq!(words("(?: alpha beta)+ x"), ["alpha"]);
        assert!(words("(?:alpha)* beta").is_empty());
    }

    #[test]
    fn ignoring_case_keeps_only_case_proof_words() {
        let mut found = required_words("x Quux Planted Marks y", true, true);
        found.sort();
        // `(?i)marks` also matches the Kelvin sign and the long s.
        assert_eq!(found, ["planted", "quux"]);
        assert!(required_words("x Café y", true, true).is_empty());
        assert_eq!(required_words("x Café y", true, false), ["cafe"]);
    }

    #[test]
    fn what_does_not_parse_pins_nothing() {
        assert!(words("(unclosed").is_empty());
        assert!(words("").is_empty());
    }
}
