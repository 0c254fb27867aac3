//! Words as the full-text indexes see them: shared by the search query
//! translation (domain), hit lines and the PostgreSQL index (storage).

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Words as SQLite's `unicode61 remove_diacritics 2` tokenizer sees them
/// (runs of letters and digits), lower case and without accents: for query
/// terms, hit lines and the PostgreSQL index alike.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(fold)
}

/// One word lower-cased with its diacritics removed (`Café` → `cafe`).
pub fn fold(word: &str) -> String {
    if word.is_ascii() {
        return word.to_ascii_lowercase();
    }
    word.nfd()
        .filter(|&c| !is_combining_mark(c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Edits (a letter inserted, deleted, replaced, or two swapped) a word
/// may be away from a typo-tolerant query word: none under 4 characters,
/// one up to 7, two from 8.
pub fn typo_edits(word: &str) -> u8 {
    match word.chars().count() {
        0..=3 => 0,
        4..=7 => 1,
        _ => 2,
    }
}

/// Whether `token` is within [`typo_edits`] of `word` (swaps count once).
pub fn near(word: &str, token: &str) -> bool {
    let edits = usize::from(typo_edits(word));
    word == token
        || (word.len().abs_diff(token.len()) <= edits * 4
            && strsim::osa_distance(word, token) <= edits)
}
