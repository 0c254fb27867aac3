//! Common-word pairs ("common grams"): every two adjacent words of which one
//! is among the most common words of prose, markup and code ([`COMMON`]) is
//! also indexed as one term, `"a class"`. A phrase of such words (`"a
//! class"`, `"div class sidebar"`) is then looked up as terms with BM25 and
//! block-max WAND, instead of intersecting two huge position lists and
//! checking positions in every page that holds both words. Pairs of rarer
//! words are not indexed: their phrases are cheap as they are.

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

/// Whether `word` (folded) is one of [`COMMON`].
pub(super) fn is_common(word: &str) -> bool {
    COMMON.binary_search(&word).is_ok()
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
