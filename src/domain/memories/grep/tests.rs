//! Grep inside one memory, held against GNU `grep -n` on the same bytes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use bytes::Bytes;
use proptest::prelude::*;

use super::*;
use crate::domain::memories::ingest::{IngestConfig, ingest};
use crate::domain::memories::locks::ObjectLocks;
use crate::storage::blob::fs::FsBlobStore;
use crate::storage::meta::sqlite::SqliteMetaStore;
use crate::storage::meta::{MemoryStore, MetaStore, ObjectRecord, SearchIndex};

/// `content` stored in frames of `frame_bytes`: the store and the object.
async fn stored(
    dir: &tempfile::TempDir,
    content: &[u8],
    frame_bytes: usize,
) -> (Arc<FsBlobStore>, Arc<ObjectRecord>) {
    let (blobs, meta, object) = stored_open(dir, content, frame_bytes).await;
    meta.close().await;
    (blobs, object)
}

/// [`stored`], with the metadata store left open.
async fn stored_open(
    dir: &tempfile::TempDir,
    content: &[u8],
    frame_bytes: usize,
) -> (Arc<FsBlobStore>, Arc<SqliteMetaStore>, Arc<ObjectRecord>) {
    let (fs, _) = FsBlobStore::open(dir.path().join("objects"), dir.path().join("tmp")).unwrap();
    let blobs = Arc::new(fs);
    let url = format!("sqlite://{}", dir.path().join("meta.sqlite").display());
    let meta = SqliteMetaStore::open(&url).await.unwrap();
    let config = IngestConfig {
        frame_bytes,
        zstd_level: 1,
        raw_inline_max: 0,
        inline_object_max: 0,
        max_upload_bytes: None,
        parallelism: 2,
        exact_tokens_max: 0,
        exact_tokens_after: u64::MAX,
    };
    let body = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::copy_from_slice(content))]);
    let ingested = ingest(
        body,
        false,
        blobs.as_ref(),
        &meta,
        &ObjectLocks::default(),
        &config,
        None,
    )
    .await
    .unwrap();
    (blobs, Arc::new(meta), Arc::new(ingested.object))
}

fn query(pattern: &str) -> GrepQuery {
    GrepQuery::new(
        GrepPattern {
            pattern: pattern.to_owned(),
            ..GrepPattern::default()
        },
        None,
        0,
    )
}

fn with_context(pattern: &str, context: u32) -> GrepQuery {
    let mut query = query(pattern);
    query.what.context = context;
    query
}

/// Every matching line number, answer after answer, following `next`.
async fn all_lines(
    blobs: &Arc<FsBlobStore>,
    object: &Arc<ObjectRecord>,
    mut q: GrepQuery,
    cap: u64,
) -> Vec<u64> {
    let mut lines = Vec::new();
    for _ in 0..100_000 {
        let reader = ObjectReader::new(object.clone(), blobs.clone());
        let answer = grep(reader, &q, cap, None).await.unwrap();
        lines.extend(answer.matches.iter().map(|m| m.line));
        assert!(answer.matches.len() <= q.max_matches as usize);
        match answer.next {
            Some(next) => {
                assert!(answer.truncated);
                assert!(next >= q.after, "next {next} went back from {}", q.after);
                q.after = next;
            }
            None => {
                assert!(!answer.truncated);
                return lines;
            }
        }
    }
    panic!("paging did not end");
}

/// What GNU grep says: the numbers of the matching lines.
fn gnu_grep(content: &[u8], pattern: &str) -> Vec<u64> {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), content).unwrap();
    let out = std::process::Command::new("grep")
        .env("LC_ALL", "C")
        .args(["-n", "-a", "-E", "-e", pattern])
        .arg(file.path())
        .output()
        .unwrap();
    out.stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let colon = l.iter().position(|b| *b == b':').unwrap();
            std::str::from_utf8(&l[..colon]).unwrap().parse().unwrap()
        })
        .collect()
}

/// Pieces of content: words, CRLF and LF endings, an invalid byte, UTF-8.
fn content() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(&b"a"[..]),
        Just(&b"b"[..]),
        Just(&b"ab"[..]),
        Just(&b"x"[..]),
        Just(&b" "[..]),
        Just(&b"\n"[..]),
        Just(&b"\r\n"[..]),
        Just(&b"\xff"[..]),
        Just("é".as_bytes()),
    ];
    prop::collection::vec(piece, 0..400).prop_map(|pieces| pieces.concat())
}

/// Patterns with the same meaning to `grep -E` and to the regex crate.
fn pattern() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("a"),
        Just("ab"),
        Just("^a"),
        Just("b$"),
        Just("a+b"),
        Just("[ab]x"),
        Just("x|ab"),
        Just("^$"),
        Just("é"),
        Just("^[abx ]*$"),
        Just("a b"),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn line_numbers_equal_gnu_grep_through_any_paging(
        content in content(),
        pattern in pattern(),
        max_matches in 1u32..6,
        cap in prop_oneof![Just(1u64), Just(100), Just(u64::MAX)],
    ) {
        let expected = gnu_grep(&content, pattern);
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let got = runtime.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let (blobs, object) = stored(&dir, &content, 64).await;
            let q = GrepQuery { max_matches, ..query(pattern) };
            all_lines(&blobs, &object, q, cap).await
        });
        prop_assert_eq!(got, expected);
    }
}

fn numbered(lines: u64) -> Vec<u8> {
    (1..=lines)
        .flat_map(|n| {
            format!("line {n:03} {}\n", if n % 10 == 0 { "hit" } else { "--" }).into_bytes()
        })
        .collect()
}

#[tokio::test]
async fn context_lines_cross_frame_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let (blobs, object) = stored(&dir, &numbered(40), 64).await;
    assert!(object.frames.len() > 5, "{} frames", object.frames.len());
    let mut q = query("hit");
    q.what.context = 3;
    let answer = grep(
        ObjectReader::new(object.clone(), blobs.clone()),
        &q,
        u64::MAX,
        None,
    )
    .await
    .unwrap();
    let lines: Vec<u64> = answer.matches.iter().map(|m| m.line).collect();
    assert_eq!(lines, [10, 20, 30, 40]);
    let second = &answer.matches[1];
    assert_eq!(second.text, "line 020 hit");
    assert_eq!(second.before, ["line 017 --", "line 018 --", "line 019 --"]);
    assert_eq!(second.after, ["line 021 --", "line 022 --", "line 023 --"]);
    assert!(answer.matches[3].after.is_empty());
    assert_eq!((answer.truncated, answer.next), (false, None));
}

#[tokio::test]
async fn the_scan_cap_pages_and_next_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let content = numbered(2000);
    let (blobs, object) = stored(&dir, &content, 1024).await;
    let first = grep(
        ObjectReader::new(object.clone(), blobs.clone()),
        &query("hit"),
        4096,
        None,
    )
    .await
    .unwrap();
    assert!(first.truncated);
    assert!(
        first.scanned_bytes >= 4096 && first.scanned_bytes < 8192,
        "{} bytes, {} frames",
        first.scanned_bytes,
        object.frames.len()
    );
    let next = first.next.unwrap();
    assert_eq!(first.matches.last().unwrap().line, next / 10 * 10);
    let all = all_lines(&blobs, &object, query("hit"), 4096).await;
    assert_eq!(all, (1..=200).map(|n| n * 10).collect::<Vec<u64>>());
    // max_matches: next is the last match, and the search goes on after it.
    let q = GrepQuery {
        max_matches: 3,
        ..query("hit")
    };
    let page = grep(
        ObjectReader::new(object.clone(), blobs.clone()),
        &q,
        u64::MAX,
        None,
    )
    .await
    .unwrap();
    assert_eq!((page.truncated, page.next), (true, Some(30)));
}

#[tokio::test]
async fn a_five_megabyte_line_is_matched_whole_and_shown_cut() {
    let dir = tempfile::tempdir().unwrap();
    let mut content = b"first\n".to_vec();
    content.extend(std::iter::repeat_n(b'z', 5 << 20));
    content.extend_from_slice(b"needle\nlast needle\n");
    let (blobs, object) = stored(&dir, &content, 512 << 10).await;
    let answer = grep(
        ObjectReader::new(object, blobs),
        &query("needle"),
        u64::MAX,
        None,
    )
    .await
    .unwrap();
    let lines: Vec<(u64, bool)> = answer.matches.iter().map(|m| (m.line, m.cut)).collect();
    assert_eq!(lines, [(2, true), (3, false)]);
    assert_eq!(answer.matches[0].text.len(), LINE_BYTES);
}

#[tokio::test]
async fn fixed_and_case_insensitive_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let (blobs, object) = stored(&dir, b"a.b\naxb\nA.B\n", 64).await;
    let run = |q: GrepQuery| {
        let (blobs, object) = (blobs.clone(), object.clone());
        async move {
            let answer = grep(ObjectReader::new(object, blobs), &q, u64::MAX, None)
                .await
                .unwrap();
            answer.matches.iter().map(|m| m.line).collect::<Vec<u64>>()
        }
    };
    assert_eq!(run(query("a.b")).await, [1, 2]);
    let mut fixed = query("a.b");
    fixed.what.fixed = true;
    assert_eq!(run(fixed.clone()).await, [1]);
    let mut both = fixed;
    both.what.ignore_case = true;
    assert_eq!(run(both).await, [1, 3]);
}

#[tokio::test]
async fn bad_and_huge_patterns_are_refused_and_wild_ones_stay_linear() {
    for (pattern, field) in [("a(b", "pattern"), ("(a{1000}){1000}", "pattern")] {
        match compile(&query(pattern)) {
            Err(DomainError::InvalidField { field: f, message }) => {
                assert_eq!(f, field, "{message}");
            }
            other => panic!("{pattern}: {other:?}"),
        }
    }
    let too_wide = with_context("a", MAX_CONTEXT + 1);
    assert!(validate(&too_wide).is_err());
    // A pattern that backtracks exponentially elsewhere: linear here.
    let dir = tempfile::tempdir().unwrap();
    let mut content = vec![b'a'; 1 << 20];
    content.push(b'\n');
    let (blobs, object) = stored(&dir, &content, 512 << 10).await;
    let answer = grep(
        ObjectReader::new(object, blobs),
        &query("(a*)*b"),
        u64::MAX,
        None,
    )
    .await
    .unwrap();
    assert!(answer.matches.is_empty());
    assert_eq!(answer.next, None);
}

/// [`stored_open`], then indexed by the background indexer (until the
/// index holds it, as a search would see it).
async fn indexed(
    dir: &tempfile::TempDir,
    content: &[u8],
    frame_bytes: usize,
) -> (Arc<FsBlobStore>, Arc<SqliteMetaStore>, Arc<ObjectRecord>) {
    let (blobs, meta, object) = stored_open(dir, content, frame_bytes).await;
    // A memory of the object queues it for the index.
    meta.put(crate::storage::meta::NewMemory {
        namespace: "grep".into(),
        fields: crate::storage::meta::MemoryFields::default(),
        tokens: 1,
        token_method: "test".into(),
        tokens_settling: false,
        summary: String::new(),
        now: 1,
        object: object.as_ref().clone(),
    })
    .await
    .unwrap();
    let search = crate::domain::search::Search::new(meta.clone(), blobs.clone());
    let indexer = search.spawn_indexer();
    for _ in 0..3000 {
        if meta.index_lag().await.unwrap().objects == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    indexer.abort();
    assert_eq!(meta.index_lag().await.unwrap().objects, 0, "not indexed");
    (blobs, meta, object)
}

/// A grep that asks the index which frames to skip, as `Memories` does.
async fn grep_with_index(
    meta: &SqliteMetaStore,
    blobs: &Arc<FsBlobStore>,
    object: &Arc<ObjectRecord>,
    q: &GrepQuery,
    cap: u64,
) -> GrepResult {
    let words = crate::domain::memories::grep::words::required_words(
        &q.what.pattern,
        q.what.fixed,
        q.what.ignore_case,
    );
    let known = if words.is_empty() {
        None
    } else {
        meta.frame_words(&object.hash, &words).await.unwrap()
    };
    let reader = ObjectReader::new(object.clone(), blobs.clone());
    grep(reader, q, cap, known.as_deref()).await.unwrap()
}

/// Every page's matches, following `next`, with the index or without it.
async fn all_matches(
    index: Option<&SqliteMetaStore>,
    blobs: &Arc<FsBlobStore>,
    object: &Arc<ObjectRecord>,
    mut q: GrepQuery,
    cap: u64,
) -> (Vec<GrepMatch>, u64) {
    let (mut matches, mut skipped) = (Vec::new(), 0);
    for _ in 0..100_000 {
        let answer = match index {
            Some(meta) => grep_with_index(meta, blobs, object, &q, cap).await,
            None => {
                let reader = ObjectReader::new(object.clone(), blobs.clone());
                grep(reader, &q, cap, None).await.unwrap()
            }
        };
        skipped += answer.skipped_bytes;
        matches.extend(answer.matches);
        match answer.next {
            Some(next) => q.after = next,
            None => return (matches, skipped),
        }
    }
    panic!("paging did not end");
}

/// Pieces of content holding the words the index patterns pin.
fn worded_content() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(&b"alpha"[..]),
        Just(&b"beta"[..]),
        Just(&b"gamma"[..]),
        Just(&b"alphabet"[..]),
        Just(&b" "[..]),
        Just(&b" "[..]),
        Just(&b"-"[..]),
        Just(&b"\n"[..]),
        Just(&b"\r\n"[..]),
        Just(&b"\xff"[..]),
        Just("é".as_bytes()),
    ];
    prop::collection::vec(piece, 0..300).prop_map(|pieces| pieces.concat())
}

/// Patterns pinning whole words, the same to `grep -E` and the regex crate.
fn worded_pattern() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("^alpha beta"),
        Just(" beta "),
        Just("alpha beta gamma"),
        Just("^beta$"),
        Just("é beta "),
        Just("-gamma-"),
        Just("beta[ -]alpha "),
        Just("^alpha$"),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    #[test]
    fn skipping_what_the_index_rules_out_changes_no_answer(
        content in worded_content(),
        pattern in worded_pattern(),
        context in 0u32..3,
        max_matches in 1u32..6,
        cap in prop_oneof![Just(1u64), Just(200), Just(u64::MAX)],
    ) {
        let expected = gnu_grep(&content, pattern);
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let (with, without) = runtime.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let (blobs, meta, object) = indexed(&dir, &content, 64).await;
            let q = GrepQuery { max_matches, ..with_context(pattern, context) };
            let with = all_matches(Some(&meta), &blobs, &object, q.clone(), cap).await.0;
            let without = all_matches(None, &blobs, &object, q, cap).await.0;
            meta.close().await;
            (with, without)
        });
        let lines: Vec<u64> = with.iter().map(|m| m.line).collect();
        prop_assert_eq!(&lines, &expected);
        if cap == u64::MAX {
            // Pages end at the same matches, so the context is the same too.
            prop_assert_eq!(with, without);
        }
    }
}

#[tokio::test]
async fn the_index_lets_grep_skip_frames_without_the_words() {
    let dir = tempfile::tempdir().unwrap();
    let mut content = numbered(40_000);
    // A line across many frames, longer than the text the index takes
    // from the next frame, with the word only at its end.
    content.extend(std::iter::repeat_n(b'z', 40 << 10));
    content.extend_from_slice(b" rare needle here\n");
    content.extend(numbered(500));
    let at = content.len() / 3;
    let at = at + content[at..].iter().position(|b| *b == b'\n').unwrap() + 1;
    content.splice(at..at, b"a rare needle, once\n".iter().copied());
    let (blobs, meta, object) = indexed(&dir, &content, 256).await;
    assert!(object.frames.len() > 2000, "{} frames", object.frames.len());
    for context in [0, 3] {
        let q = with_context("a rare needle[ ,]", context);
        let with = grep_with_index(&meta, &blobs, &object, &q, u64::MAX).await;
        let reader = ObjectReader::new(object.clone(), blobs.clone());
        let without = grep(reader, &q, u64::MAX, None).await.unwrap();
        assert_eq!(with.matches, without.matches, "context {context}");
        assert_eq!(with.matches.len(), 1);
        assert_eq!(without.skipped_bytes, 0);
        // The long line is read whole (it may match); little else is.
        assert!(
            with.scanned_bytes < (48 << 10),
            "read {} of {} bytes",
            with.scanned_bytes,
            content.len()
        );
        assert_eq!(
            with.scanned_bytes + with.skipped_bytes,
            content.len() as u64,
            "every byte read or ruled out"
        );
        let q = with_context(" rare needle ", context);
        let with = grep_with_index(&meta, &blobs, &object, &q, u64::MAX).await;
        let reader = ObjectReader::new(object.clone(), blobs.clone());
        let without = grep(reader, &q, u64::MAX, None).await.unwrap();
        assert_eq!(with.matches, without.matches, "context {context}");
        // The long line's match, cut to LINE_BYTES.
        assert_eq!(with.matches.len(), 1);
        assert!(with.matches[0].cut);
        assert!(with.skipped_bytes > 0);
    }
    meta.close().await;
}

#[tokio::test]
async fn an_object_indexed_in_several_batches_keeps_every_frame() {
    // 512 KiB frames: each is a batch of its own, so the last (done) batch
    // holds no frame — it must not clear the ones before it.
    let dir = tempfile::tempdir().unwrap();
    let mut content = Vec::new();
    for i in 0..6 {
        content.extend(numbered(40_000 + i));
        if i % 2 == 0 {
            content.extend_from_slice(format!("ZANZIBAR quux planted marker {i}\n").as_bytes());
        }
    }
    let (blobs, meta, object) = indexed(&dir, &content, 512 << 10).await;
    let words = ["planted".to_owned(), "quux".to_owned()];
    let known = meta
        .frame_words(&object.hash, &words)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(known.len(), object.frames.len());
    assert!(known.iter().all(|f| f.lines.whole_lines));
    let holding = known.iter().filter(|f| f.holds_words).count();
    assert!(
        (1..known.len()).contains(&holding),
        "{holding} of {}",
        known.len()
    );
    let mut q = query("ZANZIBAR quux planted marker");
    q.what.fixed = true;
    let answer = grep_with_index(&meta, &blobs, &object, &q, u64::MAX).await;
    assert_eq!(answer.matches.len(), 3);
    assert!(answer.skipped_bytes > 0);
    meta.close().await;
}
