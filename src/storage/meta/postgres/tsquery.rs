//! From parsed full-text expressions ([`Expr`]) to PostgreSQL `tsquery`
//! text, and from frame text to what `to_tsvector` is given, so that both
//! backends see the same words.

pub(super) use crate::storage::meta::expression::{Expr, parse};
use crate::text::words;

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
            // No typo tolerance in core PostgreSQL: a fuzzy word is matched as written.
            Self::Phrase { words, prefix, .. } => {
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
        assert_eq!(ts(r#""confgi"~"#), "'confgi'");
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
