//! From the FTS5 expressions the domain writes (src/domain/search/query.rs)
//! to PostgreSQL `tsquery` text, and from frame text to what `to_tsvector`
//! is given, so that both backends see the same words.
//!
//! The expressions are made of double-quoted lower-case phrases (a trailing
//! `*` makes the last word a prefix), `AND`, `OR`, binary `NOT` and
//! parentheses, adjacent operands being AND-ed. Precedence is FTS5's:
//! adjacency binds tightest, then `NOT`, then `AND`, then `OR`, all left to
//! right (`a NOT b c` is `a NOT (b c)`).

use crate::text::words;

/// A parsed expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Expr {
    /// A phrase: its words in order; `prefix` when the last is a prefix.
    Phrase { words: Vec<String>, prefix: bool },
    /// Both sides.
    And(Box<Expr>, Box<Expr>),
    /// Either side.
    Or(Box<Expr>, Box<Expr>),
    /// The left side without the right one.
    Not(Box<Expr>, Box<Expr>),
}

#[derive(Debug, PartialEq)]
enum Token {
    Phrase(Vec<String>, bool),
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
            tokens.push(Token::Phrase(words, prefix));
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

/// Parses an FTS5 expression of the form the domain writes.
pub(super) fn parse(expression: &str) -> Result<Expr, String> {
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
            Some(Token::Phrase(words, prefix)) => {
                let expr = Expr::Phrase {
                    words: words.clone(),
                    prefix: *prefix,
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

/// A lexeme quoted for `to_tsquery`: in single quotes, with `'` and `\` escaped.
fn lexeme(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 2);
    out.push('\'');
    for c in word.chars() {
        if c == '\'' || c == '\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

impl Expr {
    /// The expression as `to_tsquery('simple', …)` text.
    pub(super) fn tsquery(&self) -> String {
        match self {
            Self::Phrase { words, prefix } => {
                let last = words.len().saturating_sub(1);
                let parts: Vec<String> = words
                    .iter()
                    .enumerate()
                    .map(|(i, w)| {
                        let star = if *prefix && i == last { ":*" } else { "" };
                        format!("{}{star}", lexeme(w))
                    })
                    .collect();
                if parts.len() == 1 {
                    parts.concat()
                } else {
                    format!("({})", parts.join(" <-> "))
                }
            }
            Self::And(l, r) => format!("({} & {})", l.tsquery(), r.tsquery()),
            Self::Or(l, r) => format!("({} | {})", l.tsquery(), r.tsquery()),
            Self::Not(l, r) => format!("({} & !{})", l.tsquery(), r.tsquery()),
        }
    }

    /// Every phrase of the expression, negated ones too, in order.
    pub(super) fn phrases(&self) -> Vec<&Self> {
        match self {
            Self::Phrase { .. } => vec![self],
            Self::And(l, r) | Self::Or(l, r) | Self::Not(l, r) => {
                let mut all = l.phrases();
                all.extend(r.phrases());
                all
            }
        }
    }
}

/// Text bytes per indexed part at most (before normalization): under the
/// 16383 word positions PostgreSQL keeps, far under the 1 MB of a tsvector.
pub(super) const PART_BYTES: usize = 32_000;

/// A frame's text cut into parts of at most [`PART_BYTES`], at line ends
/// where possible, else between words, never inside a UTF-8 character.
pub(super) fn parts(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = text;
    while rest.len() > PART_BYTES {
        let mut limit = PART_BYTES;
        while !rest.is_char_boundary(limit) {
            limit -= 1;
        }
        let window = &rest[..limit];
        let cut = window
            .rfind('\n')
            .map(|i| i + 1)
            .or_else(|| {
                window
                    .char_indices()
                    .rev()
                    .find(|(_, c)| !c.is_alphanumeric())
                    .map(|(i, c)| i + c.len_utf8())
            })
            .filter(|&cut| cut > 0)
            .unwrap_or(limit);
        parts.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    if !rest.is_empty() || parts.is_empty() {
        parts.push(rest);
    }
    parts
}

/// The text given to `to_tsvector('simple', …)`: its words, space-separated.
pub(super) fn normalize(text: &str) -> String {
    words(text).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(expression: &str) -> String {
        parse(expression).unwrap().tsquery()
    }

    #[test]
    fn words_and_phrases_translate() {
        assert_eq!(ts(r#""hello""#), "'hello'");
        assert_eq!(ts(r#""open file""#), "('open' <-> 'file')");
        assert_eq!(ts(r#""pars"*"#), "'pars':*");
        assert_eq!(ts(r#""open fi"*"#), "('open' <-> 'fi':*)");
    }

    #[test]
    fn operators_translate_with_fts5_precedence() {
        assert_eq!(ts(r#""a" "b""#), "('a' & 'b')");
        assert_eq!(ts(r#""a" AND "b""#), "('a' & 'b')");
        assert_eq!(ts(r#""a" OR "b" "c""#), "('a' | ('b' & 'c'))");
        assert_eq!(ts(r#""a" NOT "b""#), "('a' & !'b')");
        // Adjacency binds tighter than NOT, NOT tighter than AND.
        assert_eq!(ts(r#""a" NOT "b" "c""#), "('a' & !('b' & 'c'))");
        assert_eq!(ts(r#""a" NOT "b" AND "c""#), "(('a' & !'b') & 'c')");
        assert_eq!(ts(r#""a" OR ("b" NOT "c")"#), "('a' | ('b' & !'c'))");
        assert_eq!(ts(r#""near" ("a")"#), "('near' & 'a')");
        assert_eq!(
            ts(r#""alpha" NOT "beta" NOT ("gamma" OR "delta") "eps"*"#),
            "(('alpha' & !'beta') & !(('gamma' | 'delta') & 'eps':*))"
        );
    }

    /// FTS5 expressions exactly as the domain's query translation writes
    /// them (pinned on that side by `search::query`'s tests).
    #[test]
    fn the_domain_parser_output_always_translates() {
        for fts in [
            r#""hello" "world""#,
            r#""foo bar""#,
            r#""col val" "start" "near" AND ("a")"#,
            r#""open file" "pars"*"#,
            r#""a" OR ("b" NOT "c")"#,
            r#""alpha" NOT "beta" NOT ("gamma" OR "delta") AND "eps"*"#,
            r#""unicode" "it s""#,
        ] {
            assert!(parse(fts).is_ok(), "{fts}");
        }
    }

    #[test]
    fn lexemes_are_quoted_safely() {
        assert_eq!(lexeme("it's"), "'it''s'");
        assert_eq!(lexeme(r"a\b"), r"'a\\b'");
        assert_eq!(ts(r#""ünïcode""#), "'unicode'");
    }

    #[test]
    fn malformed_expressions_are_refused() {
        for bad in [
            "",
            "AND",
            r#""a" OR"#,
            r#"("a""#,
            r#""a")"#,
            r#""a"#,
            "a",
            r#""""#,
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn text_is_normalized_like_the_query_words() {
        assert_eq!(
            normalize("Foo-bar x@y.com http://a.b/c_d Ünï\n"),
            "foo bar x y com http a b c d uni"
        );
    }

    #[test]
    fn accents_fold_as_sqlite_folds_them() {
        assert_eq!(
            normalize("Café NAÏVE Ångström façade"),
            "cafe naive angstrom facade"
        );
        // A lone combining mark separates words, as in SQLite's unicode61.
        assert_eq!(normalize("e\u{301}te\u{301}"), "e te");
        assert_eq!(ts(r#""Café crème""#), ts(r#""cafe creme""#));
        // Letters without diacritics stay as they are.
        assert_eq!(normalize("Straße ΔΈΛΤΑ 東京"), "straße δελτα 東京");
    }

    #[test]
    fn parts_cut_at_lines_and_never_inside_a_character() {
        assert_eq!(parts(""), [""]);
        assert_eq!(parts("short"), ["short"]);
        let line = format!("{}\n", "word ".repeat(1000));
        let text = line.repeat(20);
        let cut = parts(&text);
        assert!(cut.len() > 1);
        assert_eq!(cut.concat(), text);
        assert!(
            cut.iter()
                .all(|p| p.len() <= PART_BYTES && p.ends_with('\n'))
        );
        let wide = "é".repeat(40_000);
        let cut = parts(&wide);
        assert_eq!(cut.concat(), wide);
        assert!(cut.iter().all(|p| p.len() <= PART_BYTES));
        let words = "abc ".repeat(20_000);
        let cut = parts(&words);
        assert_eq!(cut.concat(), words);
        assert!(cut.iter().all(|p| p.ends_with(' ')));
    }
}
