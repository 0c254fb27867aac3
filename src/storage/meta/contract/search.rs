//! The full-text index: what matches (phrases, prefixes, NOT, OR), within
//! the caller's namespace and filters, ranked by frame.

use std::sync::Arc;

use super::super::{FrameBatch, IndexLag, ListQuery, MetaStore};
use super::{list_query, raw_put};
use crate::storage::meta::expression::parse;

/// Indexes `frames` as the frames of object `hash`, twice (it is
/// idempotent), then asks for more work, as the indexer does (an index that
/// commits in groups makes what it was given searchable by then).
async fn index(store: &dyn MetaStore, hash: &str, frames: &[&str]) {
    let batch = FrameBatch::whole(hash, frames);
    store.index_frames(batch.clone()).await.unwrap();
    store.index_frames(batch).await.unwrap();
    let pending = store.search_pending(100).await.unwrap();
    assert!(
        pending.iter().all(|p| p.hash != hash),
        "an object indexed is not handed out again"
    );
}

/// How long a test waits for objects to be handed out: a store whose
/// indexer hands out only objects no running transaction can precede
/// (PostgreSQL's) waits for every write transaction on the server, other
/// tests' too.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(20);

/// How many objects the indexer is handed, once at least `expected` are (or
/// the time is up).
async fn handed_out(store: &dyn MetaStore, expected: usize) -> usize {
    let deadline = std::time::Instant::now() + SETTLE;
    loop {
        let now = store.search_pending(100).await.unwrap().len();
        if now >= expected || std::time::Instant::now() > deadline {
            return now;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The index's lag once it is none (or the time is up), asking for work
/// as the indexer does.
async fn caught_up(store: &dyn MetaStore) -> IndexLag {
    let deadline = std::time::Instant::now() + SETTLE;
    loop {
        store.search_pending(100).await.unwrap();
        let lag = store.index_lag().await.unwrap();
        if lag == IndexLag::default() || std::time::Instant::now() > deadline {
            return lag;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// (summary, frames) of the memories of `namespace` matching `fts`, an
/// FTS5 expression as the domain's query translation writes it (`open
/// file` → `"open" "file"`; the domain's tests pin those translations).
async fn found(store: &dyn MetaStore, namespace: &str, fts: &str) -> Vec<(String, Vec<u32>)> {
    store
        .search(&parse(fts).unwrap(), &list_query(namespace))
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.record.summary, r.frames))
        .collect()
}

/// Phrases, prefixes, AND, NOT and OR match as FTS5 has them; another
/// namespace sees nothing until it holds the content itself.
pub(in crate::storage::meta) async fn search_matches_phrases_prefixes_and_not_within_the_namespace(
    store: Arc<dyn MetaStore>,
) {
    let mut docs = Vec::new();
    for (name, text) in [
        ("one", "the open-file handle failed\nparsing config.yaml"),
        ("two", "open the file later; parser ok"),
        ("three", "nothing relevant here"),
    ] {
        let mut put = raw_put("a", text, 1);
        put.summary = name.into();
        docs.push(store.put(put).await.unwrap().record.id);
    }
    assert_eq!(store.index_lag().await.unwrap().objects, 3);
    assert_eq!(handed_out(&*store, 3).await, 3);
    for (id, text) in docs.iter().zip([
        "the open-file handle failed\nparsing config.yaml",
        "open the file later; parser ok",
        "nothing relevant here",
    ]) {
        index(&*store, id, &[text]).await;
    }
    assert_eq!(caught_up(&*store).await, IndexLag::default());
    let names = |rows: Vec<(String, Vec<u32>)>| {
        let mut names: Vec<String> = rows.into_iter().map(|(n, _)| n).collect();
        names.sort();
        names
    };
    assert_eq!(names(found(&*store, "a", r#""open file""#).await), ["one"]);
    assert_eq!(
        names(found(&*store, "a", r#""open" "file""#).await),
        ["one", "two"]
    );
    assert_eq!(
        names(found(&*store, "a", r#""pars"*"#).await),
        ["one", "two"]
    );
    assert_eq!(names(found(&*store, "a", r#""file han"*"#).await), ["one"]);
    assert_eq!(
        names(found(&*store, "a", r#""open" NOT "handle""#).await),
        ["two"]
    );
    assert_eq!(
        names(found(&*store, "a", r#""config yaml" OR "relevant""#).await),
        ["one", "three"]
    );
    assert!(found(&*store, "a", r#""zebra""#).await.is_empty());
    // Another namespace sees nothing until it holds the content itself.
    assert!(found(&*store, "b", r#""open""#).await.is_empty());
    let mut put = raw_put("b", "open the file later; parser ok", 2);
    put.summary = "mine".into();
    store.put(put).await.unwrap();
    assert_eq!(names(found(&*store, "b", r#""open""#).await), ["mine"]);
}

/// A frame of ~100 KB matches as a whole (words far apart); frames are
/// ranked within a memory, best first, with lower scores better.
pub(in crate::storage::meta) async fn search_spans_a_large_frame_and_ranks_frames(
    store: Arc<dyn MetaStore>,
) {
    let filler = "lorem ipsum dolor sit amet\n".repeat(4_000); // ~108 KB: several parts
    let big = format!("alphaword at the start\n{filler}omegaword at the end\n");
    let small = "omegaword omegaword omegaword";
    let mut put = raw_put("a", &format!("{big}{small}"), 1);
    put.summary = "big".into();
    let id = store.put(put).await.unwrap().record.id;
    index(&*store, &id, &[&big, small, "unrelated"]).await;
    // Both words, far apart in frame 0: the frame matches as a whole.
    assert_eq!(
        found(&*store, "a", r#""alphaword" "omegaword""#).await,
        [("big".into(), vec![0])]
    );
    assert_eq!(
        found(&*store, "a", r#""alphaword" NOT "omegaword""#).await,
        []
    );
    // Frame 1 says it three times in a short text: ranked first.
    assert_eq!(
        found(&*store, "a", r#""omegaword""#).await,
        [("big".into(), vec![1, 0])]
    );
    let rows = store
        .search(&parse("\"omegaword\"").unwrap(), &list_query("a"))
        .await
        .unwrap();
    assert!(
        rows[0].score < 0.0,
        "lower is better, as bm25: {}",
        rows[0].score
    );
}

/// A search answers only memories passing the listing's filters (fields,
/// tag, time window), not expired ones, at most `limit` of them.
pub(in crate::storage::meta) async fn search_keeps_to_the_filters_and_the_limit(
    store: Arc<dyn MetaStore>,
) {
    let now = crate::clock::now_ms();
    let mut ids = Vec::new();
    for i in 0..6_i64 {
        let mut put = raw_put("a", &format!("needle number {i}"), now - 60_000 + i);
        put.summary = format!("m{i}");
        put.fields.thread = Some(if i % 2 == 0 { "even" } else { "odd" }.into());
        put.fields.tags = vec![format!("tag{}", i % 3)];
        if i == 5 {
            put.fields.kind = "WEB_SCRAPE".into();
        }
        let id = store.put(put).await.unwrap().record.id;
        index(&*store, &id, &[&format!("needle number {i}")]).await;
        ids.push(id);
    }
    // Expired 50 s ago: found by nothing.
    let mut gone = raw_put("a", "needle that expired", now - 60_000);
    gone.fields.ttl_seconds = Some(10);
    let gone = store.put(gone).await.unwrap().record.id;
    index(&*store, &gone, &["needle that expired"]).await;
    let names = |rows: Vec<super::super::SearchRow>| {
        let mut names: Vec<String> = rows.into_iter().map(|r| r.record.summary).collect();
        names.sort();
        names
    };
    let needle = "\"needle\"";
    let all = store
        .search(&parse(needle).unwrap(), &list_query("a"))
        .await
        .unwrap();
    assert_eq!(names(all), ["m0", "m1", "m2", "m3", "m4", "m5"]);
    let cases = [
        (
            ListQuery {
                thread: Some("odd".into()),
                ..list_query("a")
            },
            vec!["m1", "m3", "m5"],
        ),
        (
            ListQuery {
                tag: Some("tag0".into()),
                ..list_query("a")
            },
            vec!["m0", "m3"],
        ),
        (
            ListQuery {
                kind: Some("WEB_SCRAPE".into()),
                ..list_query("a")
            },
            vec!["m5"],
        ),
        (
            ListQuery {
                since: Some(now - 60_000 + 2),
                until: Some(now - 60_000 + 4),
                ..list_query("a")
            },
            vec!["m2", "m3"],
        ),
    ];
    for (filter, expected) in cases {
        assert_eq!(
            names(
                store
                    .search(&parse(needle).unwrap(), &filter)
                    .await
                    .unwrap()
            ),
            expected,
            "{filter:?}"
        );
    }
    let two = ListQuery {
        limit: 2,
        ..list_query("a")
    };
    assert_eq!(
        store
            .search(&parse(needle).unwrap(), &two)
            .await
            .unwrap()
            .len(),
        2
    );
}
