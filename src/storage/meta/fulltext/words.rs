//! The index's tokenizer: the words of [`crate::text::words`] (runs of
//! letters and digits, lower case, without accents), so that the index, the
//! query terms and the hit lines all see the same words.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

use crate::text::fold;

/// The name the tokenizer is registered under.
pub(super) const NAME: &str = "cairn_words";

/// Longest word indexed, in bytes: longer runs (base64, minified data) are
/// skipped, though they keep their position, so phrases stay exact. A
/// query for such a word finds nothing; grep finds it.
pub(super) const MAX_WORD_BYTES: usize = 255;

/// Splits text into [`crate::text::words`].
#[derive(Clone, Default)]
pub(super) struct Words;

/// The words of one text.
pub(super) struct WordStream<'a> {
    text: &'a str,
    at: usize,
    next_position: usize,
    token: Token,
}

impl Tokenizer for Words {
    type TokenStream<'a> = WordStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> WordStream<'a> {
        WordStream {
            text,
            at: 0,
            next_position: 0,
            token: Token::default(),
        }
    }
}

impl TokenStream for WordStream<'_> {
    fn advance(&mut self) -> bool {
        loop {
            let rest = &self.text[self.at..];
            let Some(start) = rest.find(char::is_alphanumeric) else {
                self.at = self.text.len();
                return false;
            };
            let from = self.at + start;
            let to = self.text[from..]
                .find(|c: char| !c.is_alphanumeric())
                .map_or(self.text.len(), |end| from + end);
            self.at = to;
            let position = self.next_position;
            self.next_position += 1;
            let word = &self.text[from..to];
            if word.len() > MAX_WORD_BYTES {
                continue;
            }
            self.token.text.clear();
            if word.is_ascii() {
                self.token
                    .text
                    .extend(word.bytes().map(|b| char::from(b.to_ascii_lowercase())));
            } else {
                self.token.text.push_str(&fold(word));
            }
            self.token.offset_from = from;
            self.token.offset_to = to;
            self.token.position = position;
            self.token.position_length = 1;
            return true;
        }
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

    fn tokens(text: &str) -> Vec<(String, usize)> {
        let mut words = Words;
        let mut stream = words.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push((stream.token().text.clone(), stream.token().position));
        }
        out
    }

    #[test]
    fn the_same_words_as_the_query_side() {
        for text in [
            "Foo-bar x@y.com http://a.b/c_d Ünï\n",
            "Café NAÏVE Ångström façade",
            "e\u{301}te\u{301} Straße ΔΈΛΤΑ 東京",
            "",
            "   ...   ",
        ] {
            let ours: Vec<String> = tokens(text).into_iter().map(|(w, _)| w).collect();
            let theirs: Vec<String> = crate::text::words(text).collect();
            assert_eq!(ours, theirs, "{text:?}");
        }
    }

    #[test]
    fn positions_count_every_word_even_a_skipped_long_one() {
        let long = "x".repeat(MAX_WORD_BYTES + 1);
        let text = format!("open {long} file handle");
        assert_eq!(
            tokens(&text),
            [("open".into(), 0), ("file".into(), 2), ("handle".into(), 3)]
        );
    }
}
