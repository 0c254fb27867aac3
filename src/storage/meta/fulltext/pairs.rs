//! Common-word pairs ("common grams"): every two adjacent words of which one
//! is among the most common words of prose, markup and code ([`COMMON`]) is
//! also indexed as one term, `"a class"`. A phrase of such words (`"a
//! class"`, `"div class sidebar"`) is then looked up as terms with BM25 and
//! block-max WAND, instead of intersecting two huge position lists and
//! checking positions in every page that holds both words. Pairs of rarer
//! words are not indexed: their phrases are cheap as they are.

use std::sync::LazyLock;

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

use super::words::{WordStream, Words};

/// The name the pairs tokenizer is registered under.
pub(super) const NAME: &str = "cairn_pairs";

/// The words that make a pair worth indexing, sorted: the most frequent
/// words of English prose, of HTML and of source code, as folded.
const COMMON: &[&str] = &[
    "0", "1", "2", "a", "all", "amp", "an", "and", "any", "are", "as", "at", "be", "bool", "br",
    "but", "by", "can", "char", "class", "code", "com", "const", "data", "def", "default", "div",
    "do", "does", "else", "end", "false", "file", "fn", "for", "from", "function", "get", "gt",
    "h", "has", "have", "href", "html", "http", "https", "i", "id", "if", "impl", "import", "in",
    "include", "int", "into", "is", "it", "its", "let", "li", "lt", "mut", "n", "name", "nbsp",
    "new", "no", "none", "not", "null", "of", "on", "one", "or", "org", "p", "pre", "pub", "quot",
    "return", "s", "self", "set", "should", "so", "span", "src", "static", "std", "str", "string",
    "struct", "style", "t", "td", "that", "the", "then", "there", "this", "title", "to", "tr",
    "true", "type", "u8", "ul", "use", "usize", "value", "var", "void", "was", "we", "which",
    "will", "with", "www", "x", "you",
];

/// A word of at most 15 bytes as one number, its bytes and then its
/// length in the top byte, so that telling a word from [`COMMON`] takes
/// integer comparisons only. Every word indexed is looked up: compared as
/// `&str`s the lookup was an eighth of the indexer's time on logs.
fn packed(word: &[u8]) -> Option<u128> {
    if word.len() >= 16 {
        return None;
    }
    let mut bytes = [0u8; 16];
    bytes[..word.len()].copy_from_slice(word);
    bytes[15] = word.len() as u8;
    Some(u128::from_le_bytes(bytes))
}

/// [`COMMON`], packed and sorted.
static COMMON_PACKED: LazyLock<Vec<u128>> = LazyLock::new(|| {
    let mut packed: Vec<u128> = COMMON.iter().filter_map(|w| packed(w.as_bytes())).collect();
    packed.sort_unstable();
    packed
});

/// Whether `word` (folded) is one of [`COMMON`].
pub(super) fn is_common(word: &str) -> bool {
    packed(word.as_bytes()).is_some_and(|key| COMMON_PACKED.binary_search(&key).is_ok())
}

/// The pair term of two adjacent folded words.
pub(super) fn pair(first: &str, second: &str) -> String {
    format!("{first} {second}")
}

/// Splits text into the common-word pairs of its [`Words`].
#[derive(Clone, Default)]
pub(super) struct Pairs {
    words: Words,
}

/// The pairs of one text.
pub(super) struct PairStream<'a> {
    words: WordStream<'a>,
    /// The word before, its position, and whether it is common.
    previous: String,
    previous_at: Option<(usize, bool)>,
    token: Token,
}

impl Tokenizer for Pairs {
    type TokenStream<'a> = PairStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> PairStream<'a> {
        PairStream {
            words: self.words.token_stream(text),
            previous: String::new(),
            previous_at: None,
            token: Token::default(),
        }
    }
}

impl TokenStream for PairStream<'_> {
    fn advance(&mut self) -> bool {
        while self.words.advance() {
            let word = self.words.token();
            let common = is_common(&word.text);
            let before = self.previous_at.replace((word.position, common));
            // Adjacent only: a skipped long word keeps its position.
            let paired = before
                .is_some_and(|(at, was_common)| at + 1 == word.position && (was_common || common));
            if paired {
                self.token.text.clear();
                self.token.text.push_str(&self.previous);
                self.token.text.push(' ');
                self.token.text.push_str(&word.text);
                self.token.offset_from = word.offset_from;
                self.token.offset_to = word.offset_to;
                self.token.position = word.position - 1;
                self.token.position_length = 1;
            }
            self.previous.clear();
            self.previous.push_str(&word.text);
            if paired {
                return true;
            }
        }
        false
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<String> {
        let mut pairs = Pairs::default();
        let mut stream = pairs.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    #[test]
    fn the_list_is_sorted_and_folded() {
        assert!(COMMON.windows(2).all(|w| w[0] < w[1]));
        assert!(COMMON.iter().all(|w| crate::text::fold(w) == *w));
        assert_eq!(COMMON_PACKED.len(), COMMON.len(), "every word packs");
    }

    #[test]
    fn a_word_is_common_exactly_when_it_is_in_the_list() {
        let mut words: Vec<String> = COMMON.iter().map(|w| w.to_string()).collect();
        for w in COMMON {
            words.push(format!("{w}\0"));
            words.push(format!("\0{w}"));
            words.push(format!("{w}s"));
            words.push(w[..w.len() - 1].to_owned());
            words.push(w.repeat(4));
        }
        words.extend(["", "\0", "classes", "the_", "é"].map(String::from));
        words.extend([15, 16, 17].map(|n| "x".repeat(n)));
        for word in &words {
            assert_eq!(is_common(word), COMMON.contains(&word.as_str()), "{word:?}");
        }
    }

    #[test]
    fn pairs_hold_a_common_word_and_stand_side_by_side() {
        assert_eq!(
            pairs("<a class=\"sidebar\">Open the Gate</a>"),
            ["a class", "class sidebar", "open the", "the gate", "gate a"]
        );
        assert!(pairs("quokka wombat numbat").is_empty());
        let long = "x".repeat(300);
        assert_eq!(pairs(&format!("the {long} cat sat")), Vec::<String>::new());
    }
}
