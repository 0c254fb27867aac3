//! The full-text expression language of the index every backend searches
//! through: [`Expr`], what [`crate::storage::meta::SearchIndex::search`]
//! takes, and [`parse`], which reads its text form. The domain writes a
//! user's query in this form (src/domain/search/query.rs) and parses it
//! itself, so a query it cannot express is its error, never the store's.
//!
//! The expressions are made of double-quoted lower-case phrases (a trailing
//! `*` makes the last word a prefix; a trailing `~` makes a one-word phrase
//! tolerate typos, see [`crate::text::typo_edits`]), `AND`, `OR`, binary `NOT` and
//! parentheses, adjacent operands being AND-ed. Precedence is FTS5's:
//! adjacency binds tightest, then `NOT`, then `AND`, then `OR`, all left to
//! right (`a NOT b c` is `a NOT (b c)`).

use crate::text::words;

/// A parsed expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// A phrase: its words in order; `prefix` when the last is a prefix;
    /// `fuzzy` when its one word also matches words a typo away.
    Phrase {
        words: Vec<String>,
        prefix: bool,
        fuzzy: bool,
    },
    /// Both sides.
    And(Box<Expr>, Box<Expr>),
    /// Either side.
    Or(Box<Expr>, Box<Expr>),
    /// The left side without the right one.
    Not(Box<Expr>, Box<Expr>),
}

#[derive(Debug, PartialEq)]
enum Token {
    Phrase(Vec<String>, bool, bool),
    And,
    Or,
    Not,
    Open,
    Close,
}

fn bad(expression: &str, why: &str) -> String {
    format!("cannot translate search expression `{expression}`: {why}")
}

fn lex(expression: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut rest = expression.trim_start();
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            let end = rest[1..]
                .find('"')
                .ok_or_else(|| bad(expression, "unterminated phrase"))?;
            let words: Vec<String> = words(&rest[1..=end]).collect();
            if words.is_empty() {
                return Err(bad(expression, "empty phrase"));
            }
            rest = &rest[end + 2..];
            let prefix = rest.starts_with('*');
            rest = rest.trim_start_matches('*');
            let fuzzy = rest.starts_with('~');
            rest = rest.trim_start_matches('~');
            if fuzzy && (prefix || words.len() != 1) {
                return Err(bad(expression, "`~` follows a single word without `*`"));
            }
            tokens.push(Token::Phrase(words, prefix, fuzzy));
        } else if c == '(' || c == ')' {
            tokens.push(if c == '(' { Token::Open } else { Token::Close });
            rest = &rest[1..];
        } else {
            let end = rest
                .find(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == '"')
                .unwrap_or(rest.len());
            tokens.push(match &rest[..end] {
                "AND" => Token::And,
                "OR" => Token::Or,
                "NOT" => Token::Not,
                other => return Err(bad(expression, &format!("unexpected `{other}`"))),
            });
            rest = &rest[end..];
        }
        rest = rest.trim_start();
    }
    Ok(tokens)
}

/// Parses an expression's text form (an FTS5 expression of the form the domain writes).
pub fn parse(expression: &str) -> Result<Expr, String> {
    let tokens = lex(expression)?;
    let mut parser = Parser {
        tokens,
        at: 0,
        expression,
    };
    let expr = parser.or()?;
    if parser.at != parser.tokens.len() {
        return Err(bad(expression, "unbalanced `)`"));
    }
    Ok(expr)
}

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    expression: &'a str,
}

impl Parser<'_> {
    fn eat(&mut self, token: &Token) -> bool {
        let found = self.tokens.get(self.at) == Some(token);
        if found {
            self.at += 1;
        }
        found
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut left = self.and()?;
        while self.eat(&Token::Or) {
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut left = self.not()?;
        while self.eat(&Token::And) {
            left = Expr::And(Box::new(left), Box::new(self.not()?));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Expr, String> {
        let mut left = self.adjacent()?;
        while self.eat(&Token::Not) {
            left = Expr::Not(Box::new(left), Box::new(self.adjacent()?));
        }
        Ok(left)
    }

    fn adjacent(&mut self) -> Result<Expr, String> {
        let mut left = self.primary()?;
        while matches!(
            self.tokens.get(self.at),
            Some(Token::Phrase(..) | Token::Open)
        ) {
            left = Expr::And(Box::new(left), Box::new(self.primary()?));
        }
        Ok(left)
    }

    fn primary(&mut self) -> Result<Expr, String> {
        match self.tokens.get(self.at) {
            Some(Token::Phrase(words, prefix, fuzzy)) => {
                let expr = Expr::Phrase {
                    words: words.clone(),
                    prefix: *prefix,
                    fuzzy: *fuzzy,
                };
                self.at += 1;
                Ok(expr)
            }
            Some(Token::Open) => {
                self.at += 1;
                let inner = self.or()?;
                if !self.eat(&Token::Close) {
                    return Err(bad(self.expression, "missing `)`"));
                }
                Ok(inner)
            }
            _ => Err(bad(self.expression, "an operand is missing")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Expr, parse};

    fn phrase(word: &str) -> Expr {
        Expr::Phrase {
            words: vec![word.to_owned()],
            prefix: false,
            fuzzy: false,
        }
    }

    #[test]
    fn a_malformed_text_is_refused_with_its_reason() {
        for (text, why) in [
            ("(\"zebra\"", "missing `)`"),
            ("\"zebra", "unterminated phrase"),
            ("\"zebra\")", "unbalanced `)`"),
            ("AND \"x\"", "an operand is missing"),
            ("\"\"", "empty phrase"),
            ("\"a b\"~", "`~` follows a single word"),
            ("zebra", "unexpected `zebra`"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    #[test]
    fn adjacency_binds_tighter_than_not_then_and_then_or() {
        let (a, b, c) = (phrase("a"), phrase("b"), phrase("c"));
        let and = |l: Expr, r: Expr| Expr::And(Box::new(l), Box::new(r));
        let not = |l: Expr, r: Expr| Expr::Not(Box::new(l), Box::new(r));
        let or = |l: Expr, r: Expr| Expr::Or(Box::new(l), Box::new(r));
        assert_eq!(
            parse("\"a\" NOT \"b\" \"c\"").unwrap(),
            not(a.clone(), and(b.clone(), c.clone()))
        );
        assert_eq!(
            parse("\"a\" OR \"b\" AND \"c\"").unwrap(),
            or(a.clone(), and(b.clone(), c.clone()))
        );
        assert_eq!(parse("(\"a\" OR \"b\") \"c\"").unwrap(), and(or(a, b), c));
    }
}
