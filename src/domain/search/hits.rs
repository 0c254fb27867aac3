//! Finding the lines of a frame's text that hold a query's terms.

use super::query::{Term, words};

/// Most hits reported per memory.
pub const MAX_HITS: usize = 5;
/// Longest hit text, in characters (longer lines are cut, with `…`).
pub const MAX_HIT_CHARS: usize = 200;

/// A matching line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    /// 1-based line number in the memory.
    pub line: u64,
    /// The line (cut to [`MAX_HIT_CHARS`]).
    pub text: String,
}

/// Does `line` hold `term` (its words in a row; the last one as a prefix if so marked)?
fn holds(tokens: &[String], term: &Term) -> bool {
    let n = term.words.len();
    if n == 0 || tokens.len() < n {
        return false;
    }
    tokens.windows(n).any(|window| {
        window
            .iter()
            .zip(&term.words)
            .enumerate()
            .all(|(i, (token, word))| {
                if term.prefix && i == n - 1 {
                    token.starts_with(word.as_str())
                } else if term.fuzzy {
                    crate::text::near(word, token)
                } else {
                    token == word
                }
            })
    })
}

fn cut(line: &str) -> String {
    let line = line.trim_end_matches('\r');
    match line.char_indices().nth(MAX_HIT_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

/// Lines of `text` (whose first line is line `first_line`) holding one of the
/// `terms`, at most `max`, in order. When no line holds a whole term (a
/// phrase across lines), lines holding any of its words are taken instead.
pub fn scan(text: &str, first_line: u64, terms: &[Term], max: usize) -> Vec<Hit> {
    let found = find(text, first_line, terms, max);
    if !found.is_empty() {
        return found;
    }
    let single: Vec<Term> = terms
        .iter()
        .flat_map(|t| {
            let last = t.words.len().saturating_sub(1);
            t.words.iter().enumerate().map(move |(i, w)| Term {
                words: vec![w.clone()],
                prefix: t.prefix && i == last,
                fuzzy: t.fuzzy,
            })
        })
        .collect();
    find(text, first_line, &single, max)
}

fn find(text: &str, first_line: u64, terms: &[Term], max: usize) -> Vec<Hit> {
    let mut hits = Vec::new();
    let mut lower = String::new();
    for (n, line) in text.split('\n').enumerate() {
        if hits.len() >= max {
            break;
        }
        // An ASCII line lacking some word of every term cannot hold one:
        // skipped without splitting it into words (most lines of a long
        // memory; the words of a term are folded, so they compare as they are).
        if line.is_ascii() {
            lower.clear();
            lower.push_str(line);
            lower.make_ascii_lowercase();
            let lower = lower.as_str();
            if !terms
                .iter()
                .any(|t| t.fuzzy || t.words.iter().all(|w| lower.contains(w.as_str())))
            {
                continue;
            }
        }
        let tokens: Vec<String> = words(line).collect();
        if terms.iter().any(|t| holds(&tokens, t)) {
            hits.push(Hit {
                line: first_line + n as u64,
                text: cut(line),
            });
        }
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(words: &[&str], prefix: bool) -> Term {
        Term {
            words: words.iter().map(|w| (*w).to_owned()).collect(),
            prefix,
            fuzzy: false,
        }
    }

    #[test]
    fn lines_with_terms_are_found_with_their_numbers() {
        let text = "alpha\nthe Parser failed\nnothing\nparsing again\n";
        let hits = scan(text, 10, &[term(&["pars"], true)], 5);
        assert_eq!(
            hits,
            [
                Hit {
                    line: 11,
                    text: "the Parser failed".into()
                },
                Hit {
                    line: 13,
                    text: "parsing again".into()
                }
            ]
        );
        assert!(scan(text, 1, &[term(&["pars"], false)], 5).is_empty());
    }

    #[test]
    fn a_typo_tolerant_word_finds_lines_with_the_word_spelt_right() {
        let text = "read the config
the configuration
config2 and conf
";
        let mut fuzzy = term(&["confgi"], false);
        fuzzy.fuzzy = true;
        let hits = scan(text, 1, &[fuzzy], 5);
        // `config` is one swap away, `config2` a swap and an insertion.
        assert_eq!(hits.iter().map(|h| h.line).collect::<Vec<_>>(), [1]);
        let mut long = term(&["configuratoin"], false);
        long.fuzzy = true;
        let hits = scan(text, 1, &[long], 5);
        assert_eq!(hits.iter().map(|h| h.line).collect::<Vec<_>>(), [2]);
    }

    #[test]
    fn phrases_match_words_in_a_row_and_fall_back_to_words() {
        let text = "open the file\nopen file now\nfile\n";
        let hits = scan(text, 1, &[term(&["open", "file"], false)], 5);
        assert_eq!(hits.iter().map(|h| h.line).collect::<Vec<_>>(), [2]);
        let split = scan("x open\nfile y\n", 1, &[term(&["open", "file"], false)], 5);
        assert_eq!(split.iter().map(|h| h.line).collect::<Vec<_>>(), [1, 2]);
    }

    #[test]
    fn hits_are_bounded_in_count_and_length() {
        let text = format!("{}\n", "word ".repeat(100)).repeat(20);
        let hits = scan(&text, 1, &[term(&["word"], false)], 3);
        assert_eq!(hits.len(), 3);
        assert_eq!(hits[0].text.chars().count(), MAX_HIT_CHARS + 1);
    }
}
