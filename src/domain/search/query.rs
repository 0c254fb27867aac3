//! Translating a user's search query into a safe FTS5 expression.
//!
//! Accepted: words (implicitly AND-ed), `"quoted phrases"`, a trailing `*`
//! for a prefix (`pars*`, `"open file"*`), the operators `AND`, `OR`, `NOT`
//! (upper case; `NOT` is binary as in FTS5: `a NOT b`), parentheses, and a
//! trailing `~` for a word that may be misspelt (`confgi~` finds `config`:
//! see [`crate::text::typo_edits`]; on the embedded index only).
//! Every word is re-quoted, so no character of the input reaches FTS5 as
//! syntax; whatever cannot be translated is refused with the reason. The
//! expression goes to the index as an [`Expr`], parsed here.

pub use crate::text::words;

use crate::storage::meta::expression::{self, Expr};

/// Longest query accepted, in bytes.
pub const MAX_QUERY_BYTES: usize = 1024;
/// Most terms (words and phrases) in one query.
pub const MAX_TERMS: usize = 64;

/// A query the user sent that cannot be searched, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QueryError(pub String);

/// A word or phrase to look for in matching lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    /// Its words, lower case.
    pub words: Vec<String>,
    /// The last word is a prefix.
    pub prefix: bool,
    /// Its one word also matches words a typo away ([`crate::text::near`]).
    pub fuzzy: bool,
}

/// A translated query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// The expression in its text form (FTS5's syntax; logs and tests).
    pub fts: String,
    /// The expression the index searches by (`fts`, parsed).
    pub expr: Expr,
    /// The terms a matching line may contain (not those under `NOT`).
    pub terms: Vec<Term>,
}

#[derive(Debug, PartialEq)]
enum Token {
    Term(Term),
    And,
    Or,
    Not,
    Open,
    Close,
}

fn lex(input: &str) -> Result<Vec<Token>, QueryError> {
    let mut tokens = Vec::new();
    let mut rest = input;
    while let Some(c) = rest.chars().next() {
        if c.is_whitespace() {
            rest = &rest[c.len_utf8()..];
        } else if c == '(' || c == ')' {
            tokens.push(if c == '(' { Token::Open } else { Token::Close });
            rest = &rest[1..];
        } else if c == '"' {
            let end = rest[1..].find('"').ok_or_else(|| {
                QueryError("unterminated quote: close the phrase with `\"`".into())
            })?;
            let phrase = &rest[1..=end];
            rest = &rest[end + 2..];
            let prefix = rest.starts_with('*');
            rest = rest.trim_start_matches('*');
            let fuzzy = rest.starts_with('~');
            rest = rest.trim_start_matches('~');
            let words: Vec<String> = words(phrase).collect();
            if words.is_empty() {
                return Err(QueryError(format!(
                    "phrase \"{phrase}\" has no searchable words"
                )));
            }
            tokens.push(Token::Term(term(words, prefix, fuzzy)?));
        } else {
            let end = rest
                .find(|c: char| c.is_whitespace() || matches!(c, '"' | '(' | ')'))
                .unwrap_or(rest.len());
            let word = &rest[..end];
            rest = &rest[end..];
            match word {
                "AND" => tokens.push(Token::And),
                "OR" => tokens.push(Token::Or),
                "NOT" => tokens.push(Token::Not),
                _ => {
                    let fuzzy = word.ends_with('~');
                    let stem = word.trim_end_matches('~').trim_end_matches('*');
                    let words: Vec<String> = words(stem).collect();
                    if words.is_empty() {
                        if stem.is_empty() {
                            return Err(QueryError(format!(
                                "`{word}`: a `*` must follow a word (prefix search: `pars*`)"
                            )));
                        }
                        continue; // punctuation alone: nothing to search for
                    }
                    let prefix = word.trim_end_matches('~').ends_with('*');
                    tokens.push(Token::Term(term(words, prefix, fuzzy)?));
                }
            }
        }
    }
    Ok(tokens)
}

/// A term, unless it asks for typo tolerance where there can be none.
fn term(words: Vec<String>, prefix: bool, fuzzy: bool) -> Result<Term, QueryError> {
    if fuzzy && (prefix || words.len() != 1) {
        return Err(QueryError(format!(
            "`{}~`: `~` (typo tolerance) follows a single word, without `*`",
            words.join(" ")
        )));
    }
    Ok(Term {
        words,
        prefix,
        fuzzy,
    })
}

fn operator_name(token: &Token) -> &'static str {
    match token {
        Token::And => "AND",
        Token::Or => "OR",
        Token::Not => "NOT",
        Token::Open => "(",
        Token::Close => ")",
        Token::Term(_) => "a term",
    }
}

/// The looser query a search retries with when `query` finds nothing: any
/// of its words of 3+ characters (not those under `NOT`) instead of all,
/// each as the prefix of its stem (the last character of a 4–6 character
/// word, the last two of a longer one, dropped), so word forms, plurals and
/// misspelt endings still find the memory; and each word of 4+ characters
/// with typos tolerated (`~`), so a letter wrong, missing or swapped inside
/// it does too. None when there is nothing looser to try.
pub fn relaxed(query: &Query) -> Option<Query> {
    let positive: Vec<&String> = query
        .terms
        .iter()
        .flat_map(|term| &term.words)
        .filter(|word| word.chars().count() >= 3)
        .collect();
    let mut stems: Vec<String> = positive
        .iter()
        .map(|word| format!("{}*", stem(word)))
        .collect();
    stems.sort();
    stems.dedup();
    let mut typos: Vec<String> = positive
        .iter()
        .filter(|word| crate::text::typo_edits(word) > 0)
        .map(|word| format!("{word}~"))
        .collect();
    typos.sort();
    typos.dedup();
    stems.extend(typos);
    if stems.is_empty() {
        return None;
    }
    // Each word gives `stem*` and `word~` (neither longer than the word plus
    // one byte), joined by ` OR `: about twice the query, past the user's
    // byte limit for a long one but never past three times it. The terms
    // stay within the user's limit (a retry of more than 32 words is not
    // made): each `word~` scans the term dictionary.
    parse_within(&stems.join(" OR "), 3 * MAX_QUERY_BYTES, MAX_TERMS)
        .ok()
        .filter(|relaxed| relaxed.fts != query.fts)
}

fn stem(word: &str) -> String {
    let chars = word.chars().count();
    let keep = match chars {
        0..=3 => chars,
        4..=6 => chars - 1,
        _ => chars - 2,
    };
    word.chars().take(keep).collect()
}

/// Translates `input` into an FTS5 expression, or says why it cannot.
pub fn parse(input: &str) -> Result<Query, QueryError> {
    parse_within(input, MAX_QUERY_BYTES, MAX_TERMS)
}

/// [`parse`] with other limits: the looser retry of a query within the
/// user's limits may be up to about three times as long.
fn parse_within(input: &str, max_bytes: usize, max_terms: usize) -> Result<Query, QueryError> {
    if input.len() > max_bytes {
        return Err(QueryError(format!(
            "the query is longer than {max_bytes} bytes"
        )));
    }
    let tokens = lex(input)?;
    let mut fts = String::new();
    let mut terms = Vec::new();
    let mut count = 0usize;
    let mut depth = 0usize;
    // True when the next token must be an operand (a term or `(`).
    let mut want_operand = true;
    // Depth below which terms count again after `NOT`, while skipping them.
    let mut negated: Option<usize> = None;
    let mut pending_not = false;
    // The previous token was `)`: FTS5 joins only phrases implicitly, so an
    // operand after a group (or a group after an operand) needs an explicit `AND`.
    let mut after_group = false;
    for token in tokens {
        let closes = token == Token::Close;
        match token {
            Token::Term(term) => {
                count += 1;
                if after_group {
                    push(&mut fts, "AND");
                }
                let quoted = format!(
                    "\"{}\"{}{}",
                    term.words.join(" "),
                    if term.prefix { "*" } else { "" },
                    if term.fuzzy { "~" } else { "" }
                );
                push(&mut fts, &quoted);
                if pending_not {
                    pending_not = false;
                } else if negated.is_none() {
                    terms.push(term);
                }
                want_operand = false;
            }
            Token::Open => {
                if pending_not {
                    pending_not = false;
                    negated.get_or_insert(depth);
                }
                if !want_operand {
                    push(&mut fts, "AND");
                }
                push(&mut fts, "(");
                depth += 1;
                want_operand = true;
            }
            Token::Close => {
                if depth == 0 {
                    return Err(QueryError("`)` without a matching `(`".into()));
                }
                if want_operand {
                    return Err(QueryError(
                        "empty parentheses or an operator before `)`".into(),
                    ));
                }
                depth -= 1;
                if negated == Some(depth) {
                    negated = None;
                }
                fts.push(')');
            }
            op @ (Token::And | Token::Or | Token::Not) => {
                if want_operand {
                    let why = if op == Token::Not {
                        "`NOT` needs a term before it (it excludes: `a NOT b`)".to_owned()
                    } else {
                        format!("`{}` needs a term on each side", operator_name(&op))
                    };
                    return Err(QueryError(why));
                }
                pending_not = op == Token::Not;
                push(&mut fts, operator_name(&op));
                want_operand = true;
            }
        }
        after_group = closes;
    }
    if count == 0 {
        return Err(QueryError("the query has no searchable words".into()));
    }
    if count > max_terms {
        return Err(QueryError(format!(
            "the query has more than {max_terms} terms"
        )));
    }
    if want_operand {
        return Err(QueryError("the query ends with an operator".into()));
    }
    if depth > 0 {
        return Err(QueryError("`(` without a matching `)`".into()));
    }
    // What the lexer left is valid by construction; should it not parse,
    // it is still this query's error, answered as such.
    let expr = expression::parse(&fts).map_err(QueryError)?;
    Ok(Query { fts, expr, terms })
}

fn push(fts: &mut String, piece: &str) {
    if !fts.is_empty() && !fts.ends_with('(') {
        fts.push(' ');
    }
    fts.push_str(piece);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fts(input: &str) -> String {
        parse(input).unwrap().fts
    }

    #[test]
    fn words_are_quoted_and_implicitly_anded() {
        assert_eq!(fts("hello world"), r#""hello" "world""#);
        assert_eq!(fts("Ünïcode"), r#""unicode""#);
    }

    #[test]
    fn punctuation_never_reaches_fts_as_syntax() {
        assert_eq!(fts("foo.bar"), r#""foo bar""#);
        assert_eq!(
            fts(r#"col:val ^start NEAR(a)"#),
            r#""col val" "start" "near" AND ("a")"#
        );
        assert_eq!(fts("a - b"), r#""a" "b""#);
    }

    #[test]
    fn phrases_prefixes_and_operators_translate() {
        assert_eq!(fts(r#""open file" pars*"#), r#""open file" "pars"*"#);
        assert_eq!(fts(r#""open fi"*"#), r#""open fi"*"#);
        assert_eq!(fts("a OR (b NOT c)"), r#""a" OR ("b" NOT "c")"#);
        assert_eq!(fts("a and b"), r#""a" "and" "b""#);
        assert_eq!(fts("a (b OR c) d"), r#""a" AND ("b" OR "c") AND "d""#);
        assert_eq!(fts("(a) (b)"), r#"("a") AND ("b")"#);
        // Pinned: the PostgreSQL store's tests take these expressions as written.
        assert_eq!(fts("open NOT handle"), r#""open" NOT "handle""#);
        assert_eq!(
            fts("config.yaml OR relevant"),
            r#""config yaml" OR "relevant""#
        );
        assert_eq!(fts(r#""file han"*"#), r#""file han"*"#);
        assert_eq!(fts("Ünïcode it's"), r#""unicode" "it s""#);
        assert_eq!(
            fts("alpha NOT beta NOT (gamma OR delta) eps*"),
            r#""alpha" NOT "beta" NOT ("gamma" OR "delta") AND "eps"*"#
        );
    }

    #[test]
    fn a_tilde_after_one_word_tolerates_typos() {
        assert_eq!(fts("confgi~ file"), r#""confgi"~ "file""#);
        assert_eq!(fts(r#""confgi"~"#), r#""confgi"~"#);
        let q = parse("confgi~").unwrap();
        assert!(q.terms[0].fuzzy && !q.terms[0].prefix);
        for bad in ["conf*~", r#""open file"~"#, "foo.bar~"] {
            let err = parse(bad).unwrap_err();
            assert!(err.0.contains("single word"), "{bad}: {err}");
        }
    }

    #[test]
    fn negated_terms_are_not_highlighted() {
        let q = parse("alpha NOT beta NOT (gamma OR delta) eps*").unwrap();
        let words: Vec<_> = q.terms.iter().map(|t| t.words.join(" ")).collect();
        assert_eq!(words, ["alpha", "eps"]);
        assert!(q.terms[1].prefix);
    }

    #[test]
    fn malformed_queries_are_refused_with_a_reason() {
        for (input, reason) in [
            ("", "no searchable words"),
            ("  !!! ", "no searchable words"),
            ("\"open file", "unterminated quote"),
            ("NOT a", "NOT"),
            ("a AND", "ends with an operator"),
            ("a OR OR b", "needs a term"),
            ("(a", "without a matching `)`"),
            ("a)", "without a matching `(`"),
            ("()", "empty parentheses"),
            ("*", "must follow a word"),
            ("\"...\"", "no searchable words"),
        ] {
            let err = parse(input).unwrap_err();
            assert!(err.0.contains(reason), "{input:?}: {err}");
        }
        assert!(parse(&"a ".repeat(65)).is_err());
        assert!(parse(&"a".repeat(2000)).is_err());
    }

    #[test]
    fn a_looser_query_takes_any_stem_of_the_positive_words() {
        let strict = parse("timeouts AND \"parse config\" NOT secret").unwrap();
        let loose = relaxed(&strict).unwrap();
        assert_eq!(
            loose.fts,
            "\"confi\"* OR \"pars\"* OR \"timeou\"* OR \"config\"~ OR \"parse\"~ OR \"timeouts\"~"
        );
        assert!(
            relaxed(&parse("an ox").unwrap()).is_none(),
            "words under 3 characters"
        );
        // Already as loose as it gets: no second try.
        assert!(relaxed(&parse("ab*").unwrap()).is_none());
        assert!(relaxed(&parse("abc*").unwrap()).is_none());
    }

    #[test]
    fn a_query_at_the_limits_still_gets_its_looser_retry() {
        // A phrase of long words (base64 in a log) within the user's limits:
        // its retry, twice as long, is still made.
        let long = format!("\"{} {}\"", "q".repeat(500), "z".repeat(500));
        assert!(long.len() <= MAX_QUERY_BYTES);
        let loose = relaxed(&parse(&long).unwrap()).expect("a looser retry");
        assert_eq!(loose.terms.len(), 4, "{}", loose.fts);
        // As many long words as a retry may take (two terms each).
        let many: Vec<String> = (0..MAX_TERMS / 2)
            .map(|i| format!("{i:03}{}", "w".repeat(27)))
            .collect();
        let many = many.join(" ");
        assert!(many.len() <= MAX_QUERY_BYTES);
        let loose = relaxed(&parse(&many).unwrap()).expect("a looser retry");
        assert_eq!(loose.terms.len(), MAX_TERMS);
        assert!(loose.fts.len() > 2 * MAX_QUERY_BYTES);
    }
}
