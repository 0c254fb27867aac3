//! From a parsed expression ([`Expr`]) to a tantivy query with FTS5's
//! meaning: phrases of adjacent words, a trailing `*` matching every word
//! with that prefix, `AND`, `OR` and binary `NOT`; and a trailing `~`
//! matching words a typo or two away ([`typo_edits`]).

use std::collections::BTreeMap;
use std::ops::Bound;

use tantivy::query::{
    BooleanQuery, ConstScoreQuery, EmptyQuery, FuzzyTermQuery, Occur, PhrasePrefixQuery,
    PhraseQuery, Query, RangeQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{Searcher, Term};

use super::pairs::{is_common, pair};
use super::words::MAX_WORD_BYTES;
use crate::storage::StorageError;
use crate::storage::meta::expression::Expr;
use crate::text::typo_edits;

/// Words of a prefix scored one by one (BM25, block-max WAND); a prefix
/// with more (`a*`) also matches the rest, at a constant low score.
pub(super) const SCORED_EXPANSIONS: usize = 32;
/// Words the last word of a phrase prefix (`"open fi"*`) may stand for.
const PHRASE_EXPANSIONS: u32 = 10_000;

/// The fields a query reads: the words, and their common-word pairs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Fields {
    /// The words, with positions.
    pub body: Field,
    /// The pairs of adjacent words one of which is common.
    pub pairs: Field,
}

/// The tantivy query for `expr` on `fields` (prefixes are expanded against
/// the words `searcher`'s segments hold).
pub(super) fn query(
    expr: &Expr,
    fields: Fields,
    searcher: &Searcher,
) -> Result<Box<dyn Query>, StorageError> {
    let field = fields.body;
    Ok(match expr {
        Expr::Phrase {
            words, fuzzy: true, ..
        } if words.len() == 1 => Box::new(FuzzyTermQuery::new(
            Term::from_field_text(field, &words[0]),
            typo_edits(&words[0]),
            true,
        )),
        Expr::Phrase { words, prefix, .. } => phrase(words, *prefix, fields, searcher)?,
        Expr::And(..) | Expr::Or(..) => {
            let occur = if matches!(expr, Expr::And(..)) {
                Occur::Must
            } else {
                Occur::Should
            };
            let mut clauses = Vec::new();
            for part in chain(expr) {
                clauses.push((occur, query(part, fields, searcher)?));
            }
            Box::new(BooleanQuery::new(clauses))
        }
        Expr::Not(kept, dropped) => Box::new(BooleanQuery::new(vec![
            (Occur::Must, query(kept, fields, searcher)?),
            (Occur::MustNot, query(dropped, fields, searcher)?),
        ])),
    })
}

/// The operands of a chain of `expr`'s operator (`a AND b AND c`), flat,
/// so that tantivy sees one intersection or union of terms.
fn chain(expr: &Expr) -> Vec<&Expr> {
    let operator = std::mem::discriminant(expr);
    let mut out = Vec::new();
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        match e {
            Expr::And(l, r) | Expr::Or(l, r) if std::mem::discriminant(e) == operator => {
                stack.push(r);
                stack.push(l);
            }
            _ => out.push(e),
        }
    }
    out
}

fn phrase(
    words: &[String],
    prefix: bool,
    fields: Fields,
    searcher: &Searcher,
) -> Result<Box<dyn Query>, StorageError> {
    let field = fields.body;
    if words
        .iter()
        .any(|w| w.len() > MAX_WORD_BYTES && !(prefix && w == &words[words.len() - 1]))
    {
        return Ok(Box::new(EmptyQuery)); // never indexed
    }
    let terms: Vec<Term> = words
        .iter()
        .map(|w| Term::from_field_text(field, w))
        .collect();
    Ok(match (terms.len(), prefix) {
        (0, _) => Box::new(EmptyQuery),
        (1, false) => Box::new(TermQuery::new(
            terms[0].clone(),
            IndexRecordOption::WithFreqs,
        )),
        (_, false) => common_pairs(words, terms, fields.pairs),
        (1, true) => word_prefix(&words[0], field, searcher)?,
        (_, true) => {
            let mut query = PhrasePrefixQuery::new(terms);
            query.set_max_expansions(PHRASE_EXPANSIONS);
            Box::new(query)
        }
    })
}

/// A phrase of two or more words: its common-word pairs as terms (the
/// phrase itself when they are all it has, else they narrow it down), or
/// the positions of its words when it holds no common word.
fn common_pairs(words: &[String], terms: Vec<Term>, pairs: Field) -> Box<dyn Query> {
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = words
        .windows(2)
        .filter(|w| is_common(&w[0]) || is_common(&w[1]))
        .map(|w| -> (Occur, Box<dyn Query>) {
            let term = Term::from_field_text(pairs, &pair(&w[0], &w[1]));
            (
                Occur::Must,
                Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)),
            )
        })
        .collect();
    if words.len() == 2 && clauses.len() == 1 {
        return clauses.remove(0).1;
    }
    if clauses.is_empty() {
        return Box::new(PhraseQuery::new(terms));
    }
    clauses.push((Occur::Must, Box::new(PhraseQuery::new(terms))));
    Box::new(BooleanQuery::new(clauses))
}

/// Every indexed word starting with `prefix`: the most frequent
/// [`SCORED_EXPANSIONS`] scored, any others matched at a constant score of 0.
fn word_prefix(
    prefix: &str,
    field: Field,
    searcher: &Searcher,
) -> Result<Box<dyn Query>, StorageError> {
    // Indexed words hold letters and digits only, so no word with the prefix
    // sorts at or after the prefix followed by U+10FFFF (a noncharacter).
    let high = format!("{prefix}\u{10FFFF}");
    let mut found: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    for segment in searcher.segment_readers() {
        let index = segment.inverted_index(field).map_err(super::failed)?;
        let mut stream = index
            .terms()
            .range()
            .ge(prefix)
            .lt(&high)
            .into_stream()
            .map_err(|e| super::failed(e.into()))?;
        while stream.advance() {
            *found.entry(stream.key().to_vec()).or_default() += u64::from(stream.value().doc_freq);
        }
    }
    let mut words: Vec<(Vec<u8>, u64)> = found.into_iter().collect();
    let rest = words.len() > SCORED_EXPANSIONS;
    words.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    words.truncate(SCORED_EXPANSIONS);
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = words
        .iter()
        .filter_map(|(word, _)| std::str::from_utf8(word).ok())
        .map(|word| -> (Occur, Box<dyn Query>) {
            (
                Occur::Should,
                Box::new(TermQuery::new(
                    Term::from_field_text(field, word),
                    IndexRecordOption::WithFreqs,
                )),
            )
        })
        .collect();
    if rest {
        let range = RangeQuery::new(
            Bound::Included(Term::from_field_text(field, prefix)),
            Bound::Excluded(Term::from_field_text(field, &high)),
        );
        clauses.push((
            Occur::Should,
            Box::new(ConstScoreQuery::new(Box::new(range), 0.0)),
        ));
    }
    Ok(match clauses.len() {
        0 => Box::new(EmptyQuery),
        1 => clauses.remove(0).1,
        _ => Box::new(BooleanQuery::new(clauses)),
    })
}
