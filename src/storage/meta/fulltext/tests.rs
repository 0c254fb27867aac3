//! The index alone: what a commit makes visible, and the expressions whose
//! translation is the index's own (prefixes of many words, phrase
//! prefixes, long words, flattened chains).

use super::*;
use crate::storage::meta::expression::parse;
use tantivy::schema::{STRING, Schema};

fn batch(hash: &str, frames: &[&str]) -> FrameBatch {
    FrameBatch::whole(hash, frames)
}

fn hashes(index: &FullText, expression: &str) -> Vec<String> {
    let (hits, all) = index.top(&parse(expression).unwrap(), 10_000).unwrap();
    assert!(all);
    let mut out: Vec<String> = hits.into_iter().map(|h| h.hash).collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn nothing_is_visible_before_the_commit_and_a_commit_answers_what_it_made_durable() {
    let (index, created) = FullText::open(None).unwrap();
    assert!(created);
    index.add(batch("a", &["zebra"])).unwrap();
    index
        .add(FrameBatch {
            done: false,
            ..batch("b", &["zebra"])
        })
        .unwrap();
    assert!(hashes(&index, "\"zebra\"").is_empty());
    assert_eq!(index.uncommitted(), ["a"]);
    assert!(
        index.commit(false, || None).unwrap().is_empty(),
        "not due yet"
    );
    assert_eq!(index.commit(true, || None).unwrap(), ["a"]);
    assert!(index.uncommitted().is_empty());
    assert_eq!(hashes(&index, "\"zebra\""), ["a", "b"]);
    assert!(
        index.commit(true, || None).unwrap().is_empty(),
        "nothing waits"
    );
}

#[test]
fn enough_text_makes_a_commit_due_before_its_time() {
    let (index, _) = FullText::open(None).unwrap();
    let half = "x".repeat(COMMIT_TEXT / 2);
    index
        .add(FrameBatch {
            done: false,
            ..batch("a", &[&half])
        })
        .unwrap();
    index.add(batch("b", &["zebra"])).unwrap();
    assert!(!index.due());
    assert!(
        index.commit(false, || None).unwrap().is_empty(),
        "half the text: not due yet"
    );
    index.add(batch("c", &[&half])).unwrap();
    assert!(index.due());
    assert_eq!(index.commit(false, || None).unwrap(), ["b", "c"]);
    assert_eq!(hashes(&index, "\"zebra\""), ["b"]);
    assert!(index.commit(false, || None).unwrap().is_empty());
}

#[test]
fn a_prefix_of_many_words_matches_them_all_and_ranks_the_frequent_ones() {
    let (index, _) = FullText::open(None).unwrap();
    let words: Vec<String> = (0..translate::SCORED_EXPANSIONS + 40)
        .map(|i| format!("pre{i:04}"))
        .collect();
    for (i, word) in words.iter().enumerate() {
        index.add(batch(&format!("{i:04}"), &[word])).unwrap();
    }
    index.add(batch("zzzz", &["other words"])).unwrap();
    index.commit(true, || None).unwrap();
    assert_eq!(hashes(&index, "\"pre\"*").len(), words.len());
    assert_eq!(hashes(&index, "\"pre0001\"*"), ["0001"]);
    assert!(hashes(&index, "\"prex\"*").is_empty());
}

#[test]
fn phrases_prefixes_and_operators_match_as_fts5_has_them() {
    let (index, _) = FullText::open(None).unwrap();
    index
        .add(batch(
            "one",
            &["the open-file handle failed", "parsing config.yaml"],
        ))
        .unwrap();
    index
        .add(batch("two", &["open the file later; parser ok"]))
        .unwrap();
    index.add(batch("three", &["Ünïcode café"])).unwrap();
    index.commit(true, || None).unwrap();
    assert_eq!(hashes(&index, r#""open file""#), ["one"]);
    assert_eq!(hashes(&index, r#""open" "file""#), ["one", "two"]);
    assert_eq!(hashes(&index, r#""file han"*"#), ["one"]);
    assert_eq!(hashes(&index, r#""open fi"*"#), ["one"]);
    assert_eq!(hashes(&index, r#""pars"*"#), ["one", "two"]);
    assert_eq!(hashes(&index, r#""open" NOT "handle""#), ["two"]);
    assert_eq!(
        hashes(&index, r#""cafe" OR "later" OR "yaml""#),
        ["one", "three", "two"]
    );
    assert_eq!(hashes(&index, r#""open" AND "file" AND "later""#), ["two"]);
    assert_eq!(hashes(&index, r#""unicode""#), ["three"]);
    // Frames are matched one by one: these words are in different frames.
    assert!(hashes(&index, r#""failed" "parsing""#).is_empty());
    let long = "x".repeat(words::MAX_WORD_BYTES + 1);
    assert!(hashes(&index, &format!("\"{long}\"")).is_empty());
}

#[test]
fn frames_of_one_object_come_in_frame_order() {
    let (index, _) = FullText::open(None).unwrap();
    index
        .add(batch("a", &["zebra", "none", "zebra zebra", "zebra"]))
        .unwrap();
    index.add(batch("b", &["zebra"])).unwrap();
    index.commit(true, || None).unwrap();
    let expr = parse("\"zebra\"").unwrap();
    assert_eq!(index.frames_of(&expr, "a", 1).unwrap(), Some(vec![0, 2, 3]));
    assert_eq!(index.frames_of(&expr, "a", 4).unwrap(), None, "all 4 known");
    assert_eq!(index.frames_of(&expr, "b", 1).unwrap(), None);
    let (hits, _) = index.top(&expr, 10).unwrap();
    assert_eq!(hits.len(), 4);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
}

#[test]
fn a_reopened_index_keeps_what_was_committed_only() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (index, created) = FullText::open(Some(dir.path())).unwrap();
        assert!(created);
        index.add(batch("a", &["zebra"])).unwrap();
        index.commit(true, || None).unwrap();
        index.add(batch("b", &["zebra"])).unwrap();
    }
    let (index, created) = FullText::open(Some(dir.path())).unwrap();
    assert!(!created);
    assert_eq!(hashes(&index, "\"zebra\""), ["a"]);
}

#[test]
fn a_typo_tolerant_word_matches_words_an_edit_or_two_away() {
    let (index, _) = FullText::open(None).unwrap();
    index.add(batch("a", &["the config file"])).unwrap();
    index.add(batch("b", &["configuration options"])).unwrap();
    index.add(batch("c", &["cong"])).unwrap();
    index.commit(true, || None).unwrap();
    assert_eq!(hashes(&index, r#""confgi"~"#), ["a"]);
    assert_eq!(hashes(&index, r#""cnofiguratoin"~"#), ["b"]);
    assert!(hashes(&index, r#""confgi""#).is_empty());
    assert_eq!(hashes(&index, r#""cnog"~"#), ["c"]);
    // Words under four characters must be exact.
    assert!(hashes(&index, r#""cgo"~"#).is_empty());
}

#[test]
fn at_least_a_score_finds_every_frame_tied_with_it_and_those_above() {
    let (index, _) = FullText::open(None).unwrap();
    // Three strong frames, then twenty identical (tied) ones.
    for i in 0..3 {
        index
            .add(batch(&format!("s{i}"), &["zebra zebra zebra"]))
            .unwrap();
    }
    for i in 0..20 {
        index
            .add(batch(&format!("t{i:02}"), &["zebra and some other words"]))
            .unwrap();
    }
    index.add(batch("none", &["no match"])).unwrap();
    index.commit(true, || None).unwrap();
    let expr = parse("\"zebra\"").unwrap();
    let (top, all) = index.top(&expr, 5).unwrap();
    assert!(!all);
    let cut = top[4].score;
    let (tied, all) = index.at_least(&expr, cut, 1000).unwrap();
    assert!(all);
    assert_eq!(tied.len(), 23, "the tie is taken whole");
    assert!(tied.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(tied[..3].iter().all(|h| h.hash.starts_with('s')));
    let tie: Vec<&str> = tied[3..].iter().map(|h| h.hash.as_str()).collect();
    let mut sorted = tie.clone();
    sorted.sort_unstable();
    assert_eq!(tie, sorted, "a tie is ordered by hash");
    // The first 5 (3 above the tie, the 2 smallest hashes of it).
    let (first, all) = index.at_least(&expr, cut, 5).unwrap();
    assert!(!all);
    let hashes: Vec<&str> = first.iter().map(|h| h.hash.as_str()).collect();
    assert_eq!(&hashes[3..], ["t00", "t01"]);
    assert_eq!(index.at_least(&expr, top[0].score, 100).unwrap().0.len(), 3);
}

#[test]
fn hash_keys_order_as_the_hashes_do() {
    // Real hashes (hex SHA-256) among themselves, other ids among themselves.
    let hex: Vec<String> = (0..200u64)
        .map(|i| format!("{:016x}{:048x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15), i))
        .collect();
    let other: Vec<String> = ["s0", "s1", "t00", "t01", "ab", "abcdefghij"]
        .map(String::from)
        .to_vec();
    for kind in [hex, other] {
        for a in &kind {
            for b in &kind {
                if hash_key(a) < hash_key(b) {
                    assert!(a < b, "{a} {b}");
                }
            }
        }
    }
}

#[test]
fn an_index_of_another_schema_is_built_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut builder = Schema::builder();
    builder.add_text_field("other", STRING);
    Index::create_in_dir(dir.path(), builder.build()).unwrap();
    let (index, created) = FullText::open(Some(dir.path())).unwrap();
    assert!(created, "so the store queues every object again");
    index.add(batch("a", &["zebra"])).unwrap();
    index.commit(true, || None).unwrap();
    assert_eq!(hashes(&index, "\"zebra\""), ["a"]);
}

#[test]
fn only_an_objects_first_batch_clears_what_an_earlier_try_left() {
    let (index, _) = FullText::open(None).unwrap();
    // An earlier, interrupted try.
    index
        .add(FrameBatch {
            done: false,
            ..batch("a", &["stale"])
        })
        .unwrap();
    index
        .add(FrameBatch {
            done: false,
            ..batch("a", &["zebra", "yak"])
        })
        .unwrap();
    // The last batch holds no frame (the ones before were sent in full).
    index
        .add(FrameBatch {
            hash: "a".into(),
            frames: Vec::new(),
            first: false,
            done: true,
        })
        .unwrap();
    index.commit(true, || None).unwrap();
    assert_eq!(hashes(&index, "\"zebra\""), ["a"]);
    assert_eq!(hashes(&index, "\"yak\""), ["a"]);
    assert!(hashes(&index, "\"stale\"").is_empty());
}

#[test]
fn phrases_of_common_words_match_exactly_what_their_positions_would() {
    let (index, _) = FullText::open(None).unwrap();
    let long = "x".repeat(words::MAX_WORD_BYTES + 1);
    let texts = [
        ("1", "<a class=\"sidebar\">".to_owned()),
        ("2", "class a, a big class".to_owned()),
        ("3", "<div class=\"sidebar\">".to_owned()),
        ("4", "<div class=\"other\"> sidebar".to_owned()),
        ("5", format!("the {long} cat")),
        ("6", "open the summary class".to_owned()),
        ("7", "open summary class".to_owned()),
    ];
    for (hash, text) in &texts {
        index.add(batch(hash, &[text.as_str()])).unwrap();
    }
    index.commit(true, || None).unwrap();
    // Two words, one common: the pair term alone.
    assert_eq!(hashes(&index, r#""a class""#), ["1"]);
    assert_eq!(hashes(&index, r#""class a""#), ["2"]);
    // Three words: the pairs narrow it down, the positions decide.
    assert_eq!(hashes(&index, r#""div class sidebar""#), ["3"]);
    assert_eq!(hashes(&index, r#""open summary class""#), ["7"]);
    assert_eq!(hashes(&index, r#""the summary class""#), ["6"]);
    // A word too long to index still keeps the others apart.
    assert!(hashes(&index, r#""the cat""#).is_empty());
    // No common word: positions only.
    assert_eq!(hashes(&index, r#""open summary""#), ["7"]);
    assert_eq!(hashes(&index, r#""class sidebar""#), ["1", "3"]);
}
