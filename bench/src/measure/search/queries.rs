//! The searches the measure asks, drawn from the words of the stored texts.

use std::collections::HashMap;
use std::collections::HashSet;

use super::{COMMON_WORDS, PREFIX_CHARS, QueryKind, RARE_MAX_MEMORIES, RARE_MIN_MEMORIES};
use crate::generate::Rng;

/// Words as FTS5's unicode61 tokenizer sees them (runs of letters and digits), lower case.
pub(super) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

pub(super) fn is_ascii_word(word: &str, alphabetic: bool) -> bool {
    word.bytes().all(|b| {
        if alphabetic {
            b.is_ascii_alphabetic()
        } else {
            b.is_ascii_alphanumeric()
        }
    })
}

/// `warmup + count` queries drawn from the words of `texts`, the kinds taking
/// turns; the same texts and seed always give the same queries.
pub fn queries(texts: &[String], count: usize, seed: u64) -> Vec<(QueryKind, String)> {
    // In how many memories each word (ASCII letters, 3 or more) occurs.
    let mut memories_with: HashMap<String, u32> = HashMap::new();
    for text in texts {
        let distinct: HashSet<String> = words(text)
            .filter(|w| w.len() >= 3 && is_ascii_word(w, true))
            .collect();
        for word in distinct {
            *memories_with.entry(word).or_default() += 1;
        }
    }
    let mut by_count: Vec<(u32, String)> = memories_with.into_iter().map(|(w, n)| (n, w)).collect();
    by_count.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let common: Vec<&str> = by_count
        .iter()
        .take(COMMON_WORDS)
        .map(|(_, w)| w.as_str())
        .collect();
    let rare: Vec<&str> = by_count
        .iter()
        .filter(|(n, w)| (RARE_MIN_MEMORIES..=RARE_MAX_MEMORIES).contains(n) && w.len() >= 4)
        .map(|(_, w)| w.as_str())
        .collect();
    let mut rng = Rng::new(seed ^ 0x5ea2_c4be_9c11_0003);
    let mut out = Vec::with_capacity(count);
    let mut tries = 0;
    while out.len() < count && tries < count * 100 {
        tries += 1;
        let kind = QueryKind::ALL[out.len() % QueryKind::ALL.len()];
        if let Some(query) = query(kind, texts, &common, &rare, &mut rng) {
            out.push((kind, query));
        }
    }
    out
}

/// Uniform in `0..n` (0 when `n` is 0).
pub(super) fn below(rng: &mut Rng, n: usize) -> usize {
    rng.below(n.max(1) as u64) as usize
}

/// A query of `kind`, or `None` when the memory drawn has no words that fit.
pub(super) fn query(
    kind: QueryKind,
    texts: &[String],
    common: &[&str],
    rare: &[&str],
    rng: &mut Rng,
) -> Option<String> {
    let single =
        |words: &[&str], rng: &mut Rng| words.get(below(rng, words.len())).map(|w| (*w).to_owned());
    match kind {
        QueryKind::CommonWord => return single(common, rng),
        QueryKind::RareWord => return single(rare, rng),
        _ => {}
    }
    let memory: Vec<String> = words(&texts[below(rng, texts.len())]).collect();
    let letters = |min_len: usize| -> Vec<&String> {
        memory
            .iter()
            .filter(|w| w.len() >= min_len && is_ascii_word(w, true))
            .collect()
    };
    match kind {
        QueryKind::TwoWords => {
            let usable = letters(3);
            let a = usable.get(below(rng, usable.len()))?;
            let b = usable.get(below(rng, usable.len()))?;
            (a != b).then(|| format!("{a} {b}"))
        }
        QueryKind::Phrase => {
            let len = 2 + below(rng, 2);
            let start = below(rng, memory.len().saturating_sub(len - 1));
            let run = memory.get(start..start + len)?;
            run.iter()
                .all(|w| is_ascii_word(w, false))
                .then(|| format!("\"{}\"", run.join(" ")))
        }
        QueryKind::Prefix => {
            let usable = letters(PREFIX_CHARS + 2);
            let word = usable.get(below(rng, usable.len()))?;
            Some(format!("{}*", &word[..PREFIX_CHARS]))
        }
        QueryKind::CommonWord | QueryKind::RareWord => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_take_turns_and_repeat_for_a_seed() {
        // Every third memory shares a word spelled from its number: a rare word.
        let texts: Vec<String> = (0..50)
            .map(|i: u8| {
                let rare: String = (i / 3)
                    .to_string()
                    .bytes()
                    .map(|d| char::from(d - b'0' + b'a'))
                    .collect();
                format!("alpha beta gamma{i} delta epsilon zeta-eta theta iota word{rare}\n")
            })
            .collect();
        let a = queries(&texts, 25, 7);
        assert_eq!(a, queries(&texts, 25, 7));
        assert_eq!(a.len(), 25);
        let kinds: Vec<QueryKind> = a.iter().take(5).map(|(kind, _)| *kind).collect();
        assert_eq!(kinds, QueryKind::ALL);
        assert!(a[1].1.starts_with("word"), "{}", a[1].1);
        assert_eq!(a[2].1.split(' ').count(), 2);
        assert!(a[3].1.starts_with('"') && a[3].1.ends_with('"'));
        assert!(a[4].1.ends_with('*') && a[4].1.len() == PREFIX_CHARS + 1);
    }
}
